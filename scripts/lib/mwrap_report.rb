# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# Reading dumps and rendering reports, for mwrap-report and mwrap-attach.
# Dumps come in two formats: our JSON Lines (a header object, then one
# object per site) and mwrap's three columns ("total_bytes call_count
# location", after optional "# " header lines).  The three-column format
# has no frees, so its live figures are unknown (nil).
require "json"
require_relative "mwrap_growth"

module MwrapReport
  # scan: the pointer scan's summary record, objects: the Ruby object
  # view record (both nil when not taken), series: the window's growth
  # series (MwrapGrowth::Series, nil outside a window).
  # stacks: a stack_sample dump's stack records (each one line's callers,
  # scaled; its sites are exact without them), nil otherwise.
  # mappings: the objects its native sites are in (path, start, limit,
  # offset, build_id, symbols: where their names came from), nil in
  # dumps without them (mwrap's three columns, older versions).
  # processes: a merged report's per-process records (type "process":
  # pid, header, sites), nil in one process's dump.
  Dump = Struct.new(:header, :sites, :scan, :objects, :series, :stacks, :mappings, :processes,
                    keyword_init: true)

  SORT_KEYS = %w[held live total allocations frees lifespan].freeze
  # How sites are grouped (--group): by innermost line (the dump's
  # location, the default), by whole stack (--stacks dumps), by file.
  GROUPS = %w[line stack file gem].freeze

  # Parses a dump file's text; raises ArgumentError on anything else.
  def self.parse(text, name = "dump")
    lines = text.lines.map(&:strip).reject(&:empty?)
    raise ArgumentError, "#{name}: empty" if lines.empty?

    lines.first.start_with?("{") ? parse_json(lines, name) : parse_columns(lines, name)
  end

  # Dumps appended to one file (MWRAP=dump_path:, kill -URG's DIR/dump)
  # are read as the last of them, as parse_columns reads its sites.
  def self.parse_json(lines, name)
    dump = Dump.new(header: {}, sites: [])
    lines.each_with_index do |l, i|
      obj = JSON.parse(l)
      raise ArgumentError, "#{name}:#{i + 1}: not an object" unless obj.is_a?(Hash)

      case obj["type"]
      when "header" then dump = Dump.new(header: obj, sites: [])
      when "site" then dump.sites << site_from_json(obj, name, i + 1)
      when "stack" then (dump.stacks ||= []) << site_from_json(obj, name, i + 1)
      when "scan" then dump.scan = obj
      when "objects" then dump.objects = obj
      when "series" then dump.series = MwrapGrowth::Series.from_h(obj)
      when "mapping" then (dump.mappings ||= []) << obj
      when "process" then (dump.processes ||= []) << obj
      else raise ArgumentError, "#{name}:#{i + 1}: unknown type #{obj['type'].inspect}"
      end
    end
    dump
  rescue JSON::ParserError => e
    raise ArgumentError, "#{name}: not JSON Lines (#{e.message.lines.first.strip})"
  end

  def self.site_from_json(obj, name, lineno)
    %w[location total_bytes allocations].each do |k|
      raise ArgumentError, "#{name}:#{lineno}: site without #{k}" unless obj.key?(k)
    end
    {
      location: obj["location"].to_s, total: obj["total_bytes"].to_i,
      allocations: obj["allocations"].to_i, frees: obj["frees"]&.to_i,
      freed: obj["freed_bytes"]&.to_i, live: obj["live_bytes"]&.to_i,
      live_count: obj["live_count"]&.to_i, age_total: obj["age_total"]&.to_i,
      max_lifespan: obj["max_lifespan"]&.to_i, held: obj["held_bytes"]&.to_i,
      scanned: obj["scanned_bytes"]&.to_i, unref: obj["unreferenced_bytes"]&.to_i,
      unref_count: obj["unreferenced_count"]&.to_i,
      stack: obj["stack"].is_a?(Array) ? obj["stack"].map(&:to_s) : nil,
    }
  end

  # --- stacks (--stacks dumps): grouping and focus -------------------

  FRAME = /\A(.+?):(\d+)(?: in (.*))?\z/m.freeze

  # A frame's "path:line in label" as [path, line, label]; a native
  # site's name as [name, nil, nil].
  def self.frame_parts(frame)
    m = FRAME.match(frame)
    m ? [m[1], m[2].to_i, m[3]] : [frame, nil, nil]
  end

  # "path:line" of a frame (its label dropped).
  def self.frame_location(frame)
    path, line, = frame_parts(frame)
    line ? "#{path}:#{line}" : frame
  end

  # The file of a location: "path:line" without its line, a native
  # "lib.so(function+0x12)[0x...]" or "lib.so(+0x12)[0x...]" without its
  # function and offset.
  def self.file_of(location)
    location.sub(/:\d+\z/, "").sub(/\([^()]*\+0x\h+\)\[0x\h+\]\z/, "")
  end

  # A site's frames, innermost first: its stack, or its location alone.
  def self.frames_of(site)
    site[:stack] && !site[:stack].empty? ? site[:stack] : [site[:location]]
  end

  # With --focus PREFIX, the frames from the first whose path starts with
  # PREFIX (the application's line that called into a gem); all of them
  # when none does.
  def self.focused(frames, focus)
    return frames unless focus

    i = frames.index { |f| frame_parts(f)[0].start_with?(focus) }
    i ? frames[i..] : frames
  end

  # --- callers: which application lines called a library line --------

  # Ruby's own library, gems, and code without a file: frames there are
  # not the application's (Debian's /usr/lib/ruby and rubygems-integration,
  # a source build's PREFIX/lib/ruby, gem, bundler and vendor/bundle
  # directories; the target's own GEM_HOME, GEM_PATH and BUNDLE_PATH come
  # in the header's "library_dirs").
  LIBRARY = %r{\A<|/lib/ruby/|/gems/|/rubygems-integration/|/vendor/bundle/}.freeze

  def self.library_path?(path, dirs)
    LIBRARY.match?(path) || dirs.any? { |d| path.start_with?(d) }
  end

  # Which frames of a dump are the application's: under --focus when
  # given; else outside the library and, where the target's own
  # directories (the header's "app_dirs": its working directory, its
  # Gemfile's) hold frames of the dump's stacks, under one of them (an
  # app run from elsewhere keeps the first rule alone).
  class Scope
    attr_reader :focus

    def initialize(dump, focus)
      @focus = focus
      @dirs = Array(dump.header["library_dirs"])
      app = Array(dump.header["app_dirs"]).reject { |d| d == "/" }
      paths = MwrapReport.stacks_of(dump).flat_map { |st| Array(st[:stack]) }.map { |f| MwrapReport.frame_parts(f)[0] }
      @app = app.select { |d| paths.any? { |p| p.start_with?(d) && !MwrapReport.library_path?(p, @dirs) } }
    end

    def app?(frame)
      path = MwrapReport.frame_parts(frame)[0]
      return path.start_with?(@focus) if @focus
      return false if MwrapReport.library_path?(path, @dirs)

      @app.empty? || @app.any? { |d| path.start_with?(d) }
    end

    # The index of the innermost application frame of FRAMES, or nil.
    def first_app(frames)
      frames.index { |f| app?(f) }
    end
  end

  def self.scope(dump, focus)
    Scope.new(dump, focus)
  end

  # The recorded stacks of DUMP: its stack records, else its sites that
  # have stacks (a dump whose every site is a stack).
  def self.stacks_of(dump)
    dump.stacks&.any? ? dump.stacks : dump.sites.select { |s| s[:stack] }
  end

  # How many callers a line lists.
  CALLERS_SHOWN = 3
  # The caller of stacks without an application frame (shown only beside
  # real callers).
  LIBRARY_ONLY = "(library only)"

  # The application callers of each library line of DUMP, by the live
  # bytes of its stacks: { "path:line" => [["path:line", share], ...] },
  # heaviest first.  A line of the application's own is its own caller
  # and has none; a stack with no application frame counts as
  # "(library only)".
  def self.callers(dump, focus: nil)
    sc = scope(dump, focus)
    by_line = Hash.new { |h, k| h[k] = Hash.new(0) }
    stacks_of(dump).each do |s|
      frames = s[:stack]
      next if sc.app?(frames.first)

      app = frames.drop(1).find { |f| sc.app?(f) }
      by_line[frame_location(frames.first)][app ? frame_location(app) : LIBRARY_ONLY] += s[:live] || s[:total]
    end
    by_line.transform_values do |c|
      sum = c.values.sum
      next [] unless sum.positive? && c.any? { |loc, b| b.positive? && loc != LIBRARY_ONLY }

      c.select { |_, b| b.positive? }.sort_by { |loc, b| [-b, loc] }.map { |loc, b| [loc, b.to_f / sum] }
    end
  end

  # SITES (rows by line) with each one's :callers from DUMP's stacks.
  def self.with_callers(dump, sites, focus: nil)
    return sites if stacks_of(dump).empty?

    c = callers(dump, focus: focus)
    sites.map { |s| c[s[:location]]&.any? ? s.merge(callers: c[s[:location]]) : s }
  end

  # --- what the application holds --------------------------------------

  # Whether DUMP splits live bytes into held (blocks that lived through a
  # GC) and in flight: a Ruby dump whose sites carry held_bytes, where a
  # GC ran during the window (before one, nothing has lived through any),
  # taken before the process's exit (at exit nothing is under way: what
  # is live is what it never freed, and its last work no GC has judged).
  def self.held?(dump)
    dump.header.key?("held_gc_count") && !dump.header["at_exit"] &&
      dump.sites.any? { |s| s[:held].to_i.positive? }
  end

  # What DUMP's rows rank by unless --sort says: held bytes where it has
  # them, else live bytes.
  def self.default_sort(dump)
    held?(dump) ? "held" : "live"
  end

  # How many application lines the text report lists.
  APP_ROWS = 10

  # The application's lines of DUMP, each with what its stacks hold: a
  # stack is named by its innermost application frame (Scope), or by its
  # innermost frame when it has none (a gem's line is the application's
  # only then).  A row has :held and :live (the sampled stacks' estimates,
  # scaled to their innermost lines' exact bytes), :reaches (the library
  # lines it allocated in) and :callers (the application lines that
  # called it) as [[location, share], ...] heaviest first, and :parts
  # (its share of each innermost line's live bytes, for its growth).
  # Ranked as rank_apps says.  [] for a dump without stacks.
  def self.app_rows(dump, focus: nil)
    sc = scope(dump, focus)
    held = held?(dump)
    exact = exact_factors(dump)
    rows = {}
    line_live = Hash.new(0)
    stacks_of(dump).each do |s|
      frames = s[:stack]
      i = sc.first_app(frames) || 0
      inner = frame_location(frames.first)
      f = exact[inner]
      live = s[:live].to_i * (f ? f[:live] : 1.0)
      kept = held ? s[:held].to_i * (f ? f[:held] : 1.0) : live
      r = rows[frame_location(frames[i])] ||= { location: frame_location(frames[i]), held: 0.0, live: 0.0,
                                                reaches: Hash.new(0.0), callers: Hash.new(0.0), parts: Hash.new(0.0) }
      r[:live] += live
      r[:held] += kept
      add_sources(r, s, f)
      r[:reaches][inner] += kept if i.positive?
      outer = frames[(i + 1)..].find { |f| sc.app?(f) }
      r[:callers][frame_location(outer)] += kept if outer
      r[:parts][inner] += s[:live].to_i
      line_live[inner] += s[:live].to_i
    end
    rows.reject! { |_, r| r[:held].round.zero? && r[:live].round.zero? }
    rows.each_value do |r|
      r[:parts] = r[:parts].to_h { |l, b| [l, line_live[l].positive? ? b / line_live[l] : 0.0] }
      r[:reaches] = shares(r[:reaches])
      # one caller is the row's only way in: named only among several
      r[:callers] = r[:callers].size > 1 ? shares(r[:callers]) : []
      r[:live] = r[:live].round
      r[:held] = held ? r[:held].round : nil
      r[:sources]&.each_value { |pt| pt.transform_values!(&:round) }
    end
    rank_apps(dump, rows.values, held)
  end

  # The figures a stack record estimates, each scaled to its line's
  # exact one by exact_factors.
  SCALED = %i[live held allocations total live_count].freeze

  # { innermost line => { figure => factor } }: the exact figure of
  # DUMP's site for each line over its stacks' estimates of it (SCALED);
  # lines whose stacks estimate none of it are left out.
  def self.exact_factors(dump)
    est = Hash.new { |h, k| h[k] = Hash.new(0) }
    stacks_of(dump).each do |s|
      e = est[frame_location(s[:stack].first)]
      SCALED.each { |k| e[k] += s[k].to_i }
    end
    dump.sites.each_with_object({}) do |site, out|
      e = est[site[:location]]
      next unless e[:live].positive?

      out[site[:location]] = factors(site, e)
    end
  end

  # Stack record S with its SCALED figures times FACTORS (exact_factors'
  # for its line, or nil: left as estimated).
  def self.scaled(s, factors)
    return s unless factors

    out = s.merge(SCALED.to_h { |k| [k, s[k] && (s[k] * factors[k]).round] })
    out[:sources] = s[:sources].transform_values { |pt| pt.to_h { |k, v| [k, (v * factors[k]).round] } } if s[:sources]
    out
  end

  # { figure => factor }: SITE's exact figures over EST's (a Hash of the
  # SCALED figures its stacks estimate); 1 where EST has none.
  def self.factors(site, est)
    SCALED.to_h { |k| [k, est[k].positive? ? site[k].to_f / est[k] : 1.0] }
  end

  # {location => bytes} as [[location, share], ...], heaviest first.
  def self.shares(bytes)
    sum = bytes.values.sum
    return [] unless sum.positive?

    bytes.select { |_, b| b.positive? }.sort_by { |l, b| [-b, l] }.map { |l, b| [l, b / sum] }
  end

  # By held bytes (live without them): held is itself the growth that
  # lasts, what the window's first half made and kept (held.h).  A row's
  # growth label comes from the series of its innermost lines, which
  # rows allocating in one library line (two callers of JSON.generate)
  # share: in Redmine a leak and a bounded cache there read "levelled"
  # and "rising" either way round, so the label does not rank.  Each
  # row gets its :trend.
  def self.rank_apps(dump, rows, held)
    series = dump.series unless dump.series&.empty?
    rows.each { |r| r[:trend] = series&.trend_for(r, held: held) }
    rows.sort_by { |r| [-rank_bytes(r, held), r[:location]] }
  end

  # The bytes a row ranks by: held with HELD, else live (totals in
  # mwrap's three columns).
  def self.rank_bytes(row, held)
    (held ? row[:held] : row[:live] || row[:total]).to_i
  end

  # --- which dependency: --group=gem -------------------------------------

  # The dependency a location belongs to, as an operator names it: a gem
  # (its gem directory, Debian's vendor_ruby and rubygems-integration
  # ones too) or its C extension, Ruby's standard library or the VM
  # itself, a native library by its file, else the application.
  def self.owner_of(location)
    path = file_of(location)
    name = path[%r{/gems/([^/]+?)-\d[^/]*/}, 1] || path[%r{/vendor_ruby/(?:\d[^/]*/)?(?:[^/]+-linux[^/]*/)?([^/.]+)}, 1]
    return "gem #{name}" if name
    return "ruby (internal)" if path.start_with?("<")
    if (lib = path[%r{/ruby/\d[^/]*/(?:[^/]+-linux[^/]*/)?([^/.]+)}, 1])
      return "ruby stdlib #{lib}"
    end
    base = File.basename(path)
    return "ruby VM (#{base.sub(/\.so.*\z/, '')})" if base.start_with?("libruby")
    return "native #{base.sub(/\.so[.\d]*\z/, '')}" if base.include?(".so")

    "application"
  end

  # "path:line (87%)" for a caller.
  def self.caller_words(loc, share)
    format("%s (%.0f%%)", loc, 100 * share)
  end

  # Sites regrouped as GROUP says: "line" (by the innermost line, or the
  # focused one: a dump's own sites when it has no stacks and no focus is
  # asked), "stack" (each stack, cut at the focus: rows keep :stack) or
  # "file".  Figures are summed; max_lifespan is the largest.  Each row's
  # :parts are its share of each innermost line's live bytes (its growth
  # is theirs in that share: MwrapGrowth::Series#ys_for).
  def self.group(sites, group: "line", focus: nil)
    return sites if group == "line" && !focus && sites.none? { |s| s[:stack] }

    rows = {}
    line_live = Hash.new(0)
    sites.each do |s|
      frames = focused(frames_of(s), focus)
      loc = s[:stack] || focus ? frame_location(frames.first) : s[:location]
      # a line is one row whatever its method's name (Tilt names one
      # template's method per thread): the names are listed
      key, name = case group
                  when "stack" then [frames.map { |f| frame_location(f) }.join("\n"), loc]
                  when "file" then [file_of(loc)] * 2
                  when "gem" then [owner_of(loc)] * 2
                  else [loc] * 2
                  end
      stack = group == "stack" && s[:stack] ? frames : nil
      m = rows[key] ||= { location: name, max_lifespan: nil, stack: stack, parts: Hash.new(0) }
      m[:stack] = m[:stack].zip(stack).map { |a, b| merge_labels(a, b) } if stack && m[:stack] != stack
      add_record(m, s)
      line = frame_location(frames_of(s).first)
      line_live[line] += s[:live].to_i
      m[:parts][line] += s[:live].to_i
    end
    rows.each_value { |m| m[:parts] = m[:parts].to_h { |l, b| [l, b.positive? ? b.to_f / line_live[l] : 0.0] } }
    rows.values
  end

  # DUMP's rows for a report: grouped as GROUP and FOCUS say, selected
  # as SELECT says (MwrapReport.select's options), and, by line, each
  # library line with its application callers.
  def self.view(dump, group: "line", focus: nil, **select)
    rows = select(group(view_sites(dump, group, focus), group: group, focus: focus), **select)
    group == "line" ? with_callers(dump, rows, focus: focus) : rows
  end

  # The samples of a pprof profile: every recorded stack (a stack_sample
  # dump's stack records, their live and held bytes scaled to their
  # innermost lines' exact ones, beside the lines they do not cover),
  # with FOCUS each cut to start at its first frame under it (the
  # application's line is then the profile's leaf); the sites of a dump
  # without stacks.
  def self.pprof_sites(dump, focus: nil)
    return dump.sites unless dump.stacks&.any? || focus

    exact = exact_factors(dump)
    view_sites(dump, "stack", focus).map do |s|
      next s unless s[:stack]

      s = scaled(s, exact[frame_location(s[:stack].first)])
      next s unless focus

      frames = focused(s[:stack], focus)
      s.merge(stack: frames, location: frame_location(frames.first))
    end
  end

  # "path:line in a" and "path:line in b" as "path:line in a, b".
  def self.merge_labels(a, b)
    path, line, la = frame_parts(a)
    lb = frame_parts(b)[2]
    labels = [la, lb].compact.flat_map { |l| l.split(", ") }.uniq
    labels.empty? ? "#{path}:#{line}" : "#{path}:#{line} in #{labels.join(', ')}"
  end

  # What a view regroups: a stack_sample dump's stack records (scaled
  # estimates) with the sites whose lines have none, for --group=stack
  # and --focus; its sites otherwise.
  def self.view_sites(dump, group, focus)
    return dump.sites unless dump.stacks&.any? && (group == "stack" || focus)

    lines = dump.stacks.to_h { |s| [s[:location], true] }
    dump.stacks + dump.sites.reject { |s| lines[s[:location]] }
  end

  # The title's words for a grouping.
  def self.group_words(group, focus)
    words = { "line" => "line", "stack" => "stack", "file" => "file",
              "gem" => "gem, C extension or library" }.fetch(group)
    focus ? "#{words}, named by the first frame under #{focus}" : words
  end

  # A site's live bytes nothing points to, scaled from the blocks the
  # scan saw to the site's live bytes (they differ under sampling and
  # by what was allocated during the scan); nil without a scan.
  def self.unreferenced(site)
    return nil unless site[:unref] && site[:scanned]
    return 0 if site[:scanned].zero?

    ((site[:live] || 0) * site[:unref].to_f / site[:scanned]).round
  end

  COLUMN_LINE = /\A(\d+)\s+(\d+)\s(.+)\z/.freeze

  def self.parse_columns(lines, name)
    header = {}
    sites = {}
    lines.each_with_index do |l, i|
      if l.start_with?("#")
        l.scan(/(\w+)=(\S+)/) { |k, v| header[k] = v =~ /\A-?\d+\z/ ? v.to_i : v }
        next
      end
      m = COLUMN_LINE.match(l) or raise ArgumentError, "#{name}:#{i + 1}: not a dump line: #{l[0, 60].inspect}"
      # appended dumps: the last one of a site wins
      sites[m[3]] = { location: m[3], total: m[1].to_i, allocations: m[2].to_i, frees: nil,
                      freed: nil, live: nil, live_count: nil, age_total: nil, max_lifespan: nil }
    end
    Dump.new(header: header, sites: sites.values)
  end

  def self.mean_lifespan(site)
    return nil unless site[:frees] && site[:age_total]

    site[:frees].positive? ? site[:age_total].to_f / site[:frees] : Float::INFINITY
  end

  def self.sort_value(site, key)
    case key
    when "held" then site[:held] || site[:live] || site[:total]
    when "live" then site[:live] || site[:total]
    when "total" then site[:total]
    when "allocations" then site[:allocations]
    when "frees" then site[:frees] || 0
    when "lifespan" then mean_lifespan(site) || 0
    end
  end

  # Applies --min, --grep, --sort and --top.
  def self.select(sites, min: 0, grep: nil, sort: "live", top: nil)
    out = sites.select { |s| (s[:live] || s[:total]) >= min }
    out = out.select { |s| grep.match?(s[:location]) } if grep
    out = out.sort_by { |s| [-sort_value(s, sort), s[:location]] }
    top ? out.first(top) : out
  end

  def self.human(n)
    return "-" if n.nil?

    x = n.to_f
    %w[B KiB MiB GiB TiB].each do |u|
      return(u == "B" ? format("%d B", x) : format("%.1f %s", x, u)) if x.abs < 1024 || u == "TiB"

      x /= 1024
    end
  end

  def self.num(n)
    n.nil? ? "-" : n.to_s
  end

  def self.header_lines(header, window: nil, series: nil)
    h = header
    out = []
    first = +"pid #{h['pid'] || '?'}"
    first << format(", window %.1f s", window || h["seconds"].to_f) if window || h["seconds"]
    first << ", ages in #{h['age_unit']}" if h["age_unit"]
    first << ", allocator #{h['allocator'].tr('-', ' ')}" if h["allocator"].to_s != ""
    out << first
    out << exit_line(h) if h["exited_after_seconds"]
    out << "no Ruby in this process: every site is a native call site (caller address)" if h["ruby"] == false
    if h["rss_bytes"]
      # when it was read: the object view's RSS (below) came before it
      line = +"RSS #{human(h['rss_bytes'])} at the dump"
      line << " | malloc in use #{human(h['malloc_in_use_bytes'])}, " \
              "free inside malloc #{human(h['malloc_free_bytes'])}" if h["malloc_in_use_bytes"]
      line << " | tracked live #{human(h['tracked_live_bytes'])}" if h["tracked_live_bytes"]
      out << line
    end
    out << net_change_line(h) if h.key?("net_change_bytes")
    out.concat(NET_FALL) if h["net_change_bytes"].to_i.negative? && h["sample_bytes"].to_i.zero?
    out << growth_line(series) if series && !series.empty?
    out << gc_line(h) if h["gc"]
    if h["sample_bytes"].to_i.positive?
      out << "figures are estimates: about one allocation in every #{human(h['sample_bytes'])} " \
             "was recorded, and scaled"
    end
    out
  end

  # Why a net change below 0 sits beside sites that grew.
  NET_FALL = ["  (below 0: blocks made before the window and freed during it outweigh what it kept;",
              "  the sites and their growth count only blocks made during it: they rise while the process shrinks)"]
    .freeze

  # What the window did to the heap: tracked live bytes are all blocks
  # made during it, while blocks from before it that it freed are only
  # counted (with the allocator's usable size).  Without this line a
  # process that shrank reads as one that grew.  Under sampling those
  # frees cannot be told from frees of unsampled blocks: no figure.
  def self.net_change_line(h)
    if h["sample_bytes"].to_i.positive?
      return "net change unknown under sampling (frees of blocks from before the window are not told apart)"
    end

    net = h["net_change_bytes"].to_i
    format("net change %s%s: tracked live %s, less %d blocks from before the window freed (%s)",
           net.negative? ? "-" : "+", human(net.abs), human(h["tracked_live_bytes"]),
           h["unknown_frees"].to_i, human(h["unknown_freed_bytes"]))
  end

  # What --gc did, from the header fields mwrap-attach's ControlClient set.
  def self.gc_line(h)
    return "no GC before this dump (--gc: #{h['gc_error']})" unless h["gc"] == "ran"

    format("full GC (GC.start) run at a Ruby safe point before this dump, in %.1f ms: " \
           "tracked live %s before, %s after",
           h["gc_ms"].to_f, human(h["gc_live_before_bytes"].to_i), human(h["gc_live_after_bytes"].to_i))
  end

  # A process that exited during mwrap-attach's window (header fields
  # set by its lib/mwrap_attach/exited.rb): its table as it exited, or
  # only the top sites of the window's last sample.
  def self.exit_line(h)
    gone = format("the process exited %.1f s into the window", h["exited_after_seconds"].to_f)
    return "#{gone}: this is its table as it exited" unless h["exit_partial_top"]

    format("%s without writing its table (killed by a signal?): PARTIAL report, only the top %d sites " \
           "of the window's last sample (%.1f s in)", gone, h["exit_partial_top"].to_i,
           h["exit_partial_sample_seconds"].to_f)
  end

  # All tracked live bytes over the window, from its series.
  def self.growth_line(series)
    tr = series.total_trend
    n = series.gc || series.t.size
    line = +"tracked live over the window: #{human(series.live.first)} -> #{human(series.live[n - 1])}"
    line << " (#{n} samples#{", #{human(series.live.last)} after the GC" if series.gc})"
    line << ", #{MwrapGrowth.words(tr, method(:human))}" if tr
    line << " (grew, then levelled off)" if tr && tr[:state] == "levelled"
    line
  end

  # The JIT compiler's own site (YJIT's, ZJIT's: preload/core/jit.h).
  JIT_SITE = /\A[YZ]?JIT compiler\z/.freeze

  # How much the JIT compiler holds, said apart: its allocations are its
  # own site, never charged to the Ruby lines that ran while it compiled.
  def self.jit_line(dump)
    s = dump.sites.find { |x| JIT_SITE.match?(x[:location]) }
    return nil unless s

    format("%s holds %s live (%d allocations, %s in all in the window): its own site, " \
           "not the Ruby lines that ran while it compiled", s[:location], human(s[:live] || s[:total]),
           s[:allocations], human(s[:total]))
  end

  # The leak view: sites by live bytes, with their share of the total;
  # with a window's series, each site's growth (bytes/s) and its state at
  # the end (rising, levelled, falling, flat).
  # APPS: the application's lines first (app_rows), where the dump has
  # stacks; FOCUS: --focus, which frames are the application's.
  def self.text(dump, sites, window: nil, title: nil, apps: true, focus: nil)
    live_total = dump.sites.sum { |s| s[:live] || 0 }
    series = dump.series unless dump.series&.empty?
    held = held?(dump)
    out = +"mwrap report: #{header_lines(dump.header, window: window, series: series).join("\n")}\n"
    held_lines(dump).each { |l| out << "#{l}\n" }
    jit = jit_line(dump)
    out << "#{jit}\n" if jit
    out << objects_text(dump.objects) if dump.objects
    out << scan_text(dump) if dump.scan
    out << apps_text(dump, focus: focus) if apps
    out << "#{title}\n" if title
    if dump.sites.any? { |s| s[:live].nil? }
      out << "(an mwrap three-column dump: no frees recorded, so totals stand in for live bytes)\n"
    end
    unref = dump.scan ? format(" %14s", "unreferenced") : ""
    kept = held ? format(" %14s", "held_bytes") : ""
    growth = series ? format("  %-22s", "growth") : ""
    out << format("%14s%s %6s %10s%s %14s %11s %11s %13s%s  %s\n", "live_bytes", kept, "share", "live_count", unref,
                  "total_bytes", "allocations", "frees", "mean_lifespan", growth, "location")
    sites.each do |s|
      share = s[:live] && live_total.positive? ? format("%5.1f%%", 100.0 * s[:live] / live_total) : "-"
      mean = mean_lifespan(s)
      mean = mean.nil? || mean.infinite? ? "-" : format("%.1f", mean)
      unref = dump.scan ? format(" %14s", num(unreferenced(s))) : ""
      kept = held ? format(" %14s", num(s[:held])) : ""
      growth = series ? format("  %-22s", MwrapGrowth.words(series.trend_for(s, held: held), method(:human))) : ""
      out << format("%14s%s %6s %10s%s %14d %11d %11s %13s%s  %s\n", num(s[:live]), kept, share, num(s[:live_count]),
                    unref, s[:total], s[:allocations], num(s[:frees]), mean, growth, s[:location])
      from = sources_words(dump, s, held)
      out << "#{' ' * 20}#{from}\n" if from
      # --group=stack: the callers, under the row
      Array(s[:stack]).drop(1).each { |f| out << "#{' ' * 20}from #{f}\n" }
      Array(s[:callers]).first(CALLERS_SHOWN).each do |loc, share|
        out << "#{' ' * 20}called from #{caller_words(loc, share)}\n"
      end
    end
    out << format("(%d of %d sites shown; %s live in all sites)\n", sites.size, dump.sites.size,
                  human(live_total))
    hint = symbols_hint(sites)
    out << "#{hint}\n" if hint
    out
  end

  # A native site named by its offset alone: its binary has no symbol
  # there ("libruby-3.1.so.3.1(+0xd8484)[0x...]").
  UNNAMED = /\A(.+?)\(\+0x\h+\)\[0x\h+\]\z/.freeze

  # Where the names of SITES' unnamed native sites come from, or nil.
  def self.symbols_hint(sites)
    bins = sites.filter_map { |s| s[:location][UNNAMED, 1] }.uniq
    return nil if bins.empty?

    format("native sites without function names (%s): a dump names them once their binary's " \
           "debug symbols are installed (Debian: its -dbgsym package from the debian-debug " \
           "archive, e.g. libruby3.1-dbgsym; find-dbgsym-packages PID lists them)",
           bins.first(3).map { |b| File.basename(b) }.join(", "))
  end

  # What the report says of held bytes: held_line where the dump has
  # them; in a merge, which sources have none (the rows rank by live
  # bytes), or where no GC ran.
  def self.held_lines(dump)
    h = dump.header
    out = []
    out << held_line(dump) if h.key?("held_gc_count")
    if h["held_none"]
      out << "  (no GC ran in the window of #{h['held_none'].join(', ')}: what it holds counts as in flight)"
    end
    if h["held_missing"]
      why = h["held_missing"].map { |m| "#{m['source']}: #{m['why']}" }.join("; ")
      which = h["held_missing"].size == Array(h["sources"]).size ? "no source splits" : "not every source splits"
      out << "rows rank by live bytes: #{which} held from in flight (#{why})"
    end
    out
  end

  # What held means, and how much of the tracked bytes it is; or why
  # nothing is held (no GC ran during the window).
  def self.held_line(dump)
    live = dump.sites.sum { |s| s[:live].to_i }
    if dump.header["at_exit"]
      return "taken as the process exited: rows rank by live bytes, what it never freed"
    end
    unless held?(dump)
      return "no GC has run since tracking began: no block has lived through one yet, so rows rank by live bytes"
    end

    h = dump.header
    through = if h["held_min_age"].to_i > 1
                format("at least %d of the %d GCs since the oldest", h["held_min_age"], h["held_window_gcs"])
              else
                "a GC"
              end
    format("held %s of %s tracked live: blocks that lived through %s; the rest is in flight " \
           "(garbage not yet collected, work under way)",
           human(dump.sites.sum { |s| s[:held].to_i }), human(live), through)
  end

  # The application's lines (app_rows), the first table: what each holds,
  # what it has in flight, its growth, the library lines it allocated in
  # and, when several, the application lines that called it.
  def self.apps_text(dump, focus: nil)
    rows = app_rows(dump, focus: focus)
    return "" if rows.empty?

    held = held?(dump)
    series = dump.series unless dump.series&.empty?
    what = held ? "what they hold (held, above; " : "their live bytes ("
    out = +"the application's lines, ranked by #{what}estimates from the sampled stacks):\n"
    out << format("%14s %14s  %-22s  %s\n", held ? "held_bytes" : "live_bytes", held ? "in_flight" : "",
                  series ? "growth" : "", "location")
    # what holds nothing is not the answer
    all = rows.size
    rows = rows.select { |r| rank_bytes(r, held).positive? }
    rows.first(APP_ROWS).each do |r|
      flight = held ? human([r[:live] - r[:held], 0].max) : ""
      out << format("%14s %14s  %-22s  %s\n", human(rank_bytes(r, held)), flight,
                    series ? MwrapGrowth.words(r[:trend], method(:human)) : "", r[:location])
      from = sources_words(dump, r, held)
      out << "#{' ' * 20}#{from}\n" if from
      r[:reaches].first(CALLERS_SHOWN).each { |l, sh| out << "#{' ' * 20}allocating in #{caller_words(l, sh)}\n" }
      r[:callers].first(CALLERS_SHOWN).each { |l, sh| out << "#{' ' * 20}called from #{caller_words(l, sh)}\n" }
    end
    out << format("(%d of the %d application lines that %s shown; %d more %s none)\n",
                  [rows.size, APP_ROWS].min, rows.size, held ? "hold memory" : "have live bytes",
                  all - rows.size, held ? "hold" : "have")
  end

  # Fewer allocations a second than this over a window: an idle process
  # (a worker the load did not reach).
  IDLE_RATE = 100

  # DUMP in a few lines, for one process of many (the merged view says
  # the rest): its header's first line, how much it allocated, what it
  # holds, and its first application line, or that it was idle.
  def self.summary(dump)
    h = dump.header
    out = +"#{header_lines(h).first}\n"
    out << "#{exit_line(h)}\n" if h["exited_after_seconds"]
    allocs = dump.sites.sum { |s| s[:allocations].to_i }
    secs = [h["seconds"].to_f, 1.0].max
    kept = held?(dump) ? ", held #{human(dump.sites.sum { |s| s[:held].to_i })}" : ""
    out << format("%d allocations in the window (%.0f/s), tracked live %s%s\n", allocs, allocs / secs,
                  human(dump.sites.sum { |s| s[:live].to_i }), kept)
    if allocs / secs < IDLE_RATE
      out << "idle: the window saw almost no allocation (the load did not reach this process?)\n"
    else
      first = app_rows(dump).first || select(dump.sites, sort: default_sort(dump)).first
      out << "holds most: #{human(rank_bytes(first, held?(dump)))} #{first[:location]}\n" if first
    end
    out
  end

  # RSS, malloc, tracked malloc and Ruby's own view side by side: the
  # comparison that tells a native leak from Ruby objects or iseqs.
  def self.objects_text(obj)
    mem = obj["memsize_by_type"] || {}
    out = +"memory side by side (object view taken at a safe point):\n"
    [["RSS (before the dump)", obj["rss_bytes"]],
     ["malloc in use (all arenas)", obj["malloc_in_use_bytes"]],
     ["tracked live malloc (this window)", obj["tracked_live_bytes"]],
     ["Ruby objects, memsize of all", mem["TOTAL"]],
     ["  of which strings (T_STRING)", mem["T_STRING"]],
     ["  of which internal (T_IMEMO)", mem["T_IMEMO"]],
     ["instruction sequences (#{obj['iseq_count'] || '?'} iseqs)", obj["iseq_memsize"]]].each do |label, v|
      out << format("  %-40s %12s\n", label, human(v))
    end
    co = obj["count_objects"] || {}
    gc = obj["gc_stat"] || {}
    out << format("  objects: %d live of %d slots; GC runs %s (major %s); heap pages %s\n",
                  co["TOTAL"].to_i - co["FREE"].to_i, co["TOTAL"].to_i, num(gc["count"]),
                  num(gc["major_gc_count"]), num(gc["heap_allocated_pages"]))
    out << "  heap dump: #{obj['heap_dump']}\n" if obj["heap_dump"]
    Array(obj["errors"]).each { |e| out << "  (object view: #{e})\n" }
    out
  end

  def self.scan_text(dump)
    sc = dump.scan
    unref = dump.sites.sum { |s| unreferenced(s) || 0 }
    live = dump.sites.sum { |s| s[:live] || 0 }
    # pages not resident (swapped out, a file's never read) are left
    # unread: reading would fault them in and leave the process bigger
    unread = sc["not_resident_bytes"].to_i.positive? ? ", #{human(sc['not_resident_bytes'])} not resident left unread" : ""
    format("pointer scan: %s of %s live nothing points to (%d blocks checked, %s of memory read in %d ms%s%s);\n" \
           "  an estimate: blocks reachable only from other leaked blocks count as referenced\n",
           human(unref), human(live), sc["blocks"].to_i, human(sc["memory_bytes"]), sc["ms"].to_i, unread,
           sc["complete"] ? "" : ", STOPPED at the time limit: unreferenced figures are too high")
  end

  # DUMP as recorded (its sites ungrouped, its stack records), for a
  # reader that groups it itself (mwrap-report, a fleet's merge).
  def self.raw_json(dump)
    json(dump, dump.sites, stacks: dump.stacks || [])
  end

  # DUMP's header and SITES as JSON Lines, then STACKS (stack records),
  # the mappings, then the series.
  def self.json(dump, sites, stacks: [])
    series = dump.series unless dump.series&.empty?
    rows = sites.map { |s| JSON.generate(record("site", s, series, held: held?(dump))) }
    rows += stacks.map { |s| JSON.generate(record("stack", s, nil)) }
    rows += Array(dump.mappings).map { |m| JSON.generate(m) }
    rows += Array(dump.processes).map { |pr| JSON.generate(pr) }
    extra = [dump.scan, dump.objects].compact.map { |r| JSON.generate(r) }
    # the series last: readers of a header, then sites, meet it after them
    rows << JSON.generate(series.to_h) if series
    ([JSON.generate(dump.header.merge("type" => "header"))] + extra + rows).join("\n") + "\n"
  end

  # One site (or stack) record of TYPE, with its growth in SERIES (of
  # what it holds, with HELD).
  def self.record(type, s, series, held: false)
    tr = series&.trend_for(s, held: held)
    { "type" => type, "location" => s[:location], "total_bytes" => s[:total],
      "allocations" => s[:allocations], "frees" => s[:frees], "freed_bytes" => s[:freed],
      "live_bytes" => s[:live], "live_count" => s[:live_count],
      "age_total" => s[:age_total], "max_lifespan" => s[:max_lifespan], "held_bytes" => s[:held],
      "scanned_bytes" => s[:scanned], "unreferenced_bytes" => s[:unref],
      "unreferenced_count" => s[:unref_count],
      "growth_bytes_per_s" => tr && tr[:slope].round(1), "growth" => tr && tr[:state],
      "growth_stderr_bytes_per_s" => tr && tr[:stderr]&.round(1),
      "stack" => s[:stack],
      "callers" => s[:callers]&.map { |loc, sh| { "location" => loc, "share" => sh.round(4) } },
      "sources" => sources_json(s, held) }.compact
  end

  # A merged record's parts, each source's figures (as a site record
  # names them) and its share of the record's held bytes with HELD
  # (where it holds any), else of its live bytes; the heaviest first.
  # nil for a record of one dump.
  def self.sources_json(s, held)
    return nil unless s[:sources]

    key = held && s[:held].to_i.positive? ? :held : :live
    sum = s[:sources].values.sum { |pt| pt[key].to_f }
    s[:sources].sort_by { |n, pt| [-pt[key].to_f, n] }.map do |n, pt|
      { "source" => n, "live_bytes" => pt[:live], "held_bytes" => pt[:held], "total_bytes" => pt[:total],
        "allocations" => pt[:allocations], "live_count" => pt[:live_count],
        "share" => sum.positive? ? (pt[key].to_f / sum).round(4) : nil }.compact
    end
  end

  SUMMED = %i[total allocations frees freed live live_count age_total held scanned unref unref_count].freeze

  # Records summed by KEY (a block of a record): a site's location, a
  # stack's frames; max_lifespan is the largest.
  def self.sum_by(records)
    out = {}
    records.each do |s|
      m = out[yield(s)] ||= { location: s[:location], max_lifespan: nil, stack: s[:stack] }
      add_record(m, s)
    end
    out.values
  end

  # Adds record S's figures to ROW's (SUMMED; the largest max_lifespan;
  # each source's part).
  def self.add_record(row, s)
    SUMMED.each { |k| row[k] = (row[k] || 0) + s[k] unless s[k].nil? }
    row[:max_lifespan] = [row[:max_lifespan], s[:max_lifespan]].compact.max
    add_sources(row, s)
  end

  # One source of a merged report (a process, a file) as a "process"
  # record: its pid, its name (NAME, when it is not its pid), its header
  # and its sites, ranked, each with its growth.
  def self.process_record(dump, name = nil)
    series = dump.series unless dump.series&.empty?
    sites = select(dump.sites, sort: default_sort(dump))
    { "type" => "process", "pid" => dump.header["pid"], "source" => name, "header" => dump.header,
      "sites" => sites.map { |s| record("site", s, series, held: held?(dump)).except("type") } }.compact
  end

  # --- merged reports: many sources as one -------------------------------

  # Many dumps as one: a master's workers (--children-of, -p A,B) or
  # files from many hosts (mwrap-report --merge), each a source: SOURCES
  # names them ({"name" => ..., and what else says which it is: pid,
  # host, file}), NOUN says what they are ("processes", "sources").
  # Sites are summed by location, stacks by their frames, growth series
  # sample by sample (only where every source has one: a --dump has
  # none), header figures summed, pids listed; every record keeps each
  # source's part of its figures (:sources, by name; merged_stacks).
  # Held bytes stay the ranking where every source can split them (not
  # taken at exit, not without the split); otherwise the header's
  # held_missing names the sources without and why, and rows rank by
  # live bytes.  held_none names sources where no GC ran (they hold
  # nothing yet).
  def self.merge(dumps, sources: dumps.map { |d| { "name" => d.header["pid"].to_s, "pid" => d.header["pid"] } },
                 noun: "processes")
    names = sources.map { |src| src["name"] }
    tagged_sites = dumps.zip(names).flat_map { |d, n| d.sites.map { |s| tagged(s, n) } }
    sites = sum_by(tagged_sites) { |s| s[:stack] ? s[:stack].join("\n") : s[:location] }
    series = dumps.map(&:series).compact.reject(&:empty?)
    header = { "pid" => dumps.map { |d| d.header["pid"] }.join(","), "sources" => sources, "sources_noun" => noun }
    %w[rss_bytes malloc_in_use_bytes malloc_free_bytes malloc_arena_bytes tracked_live_bytes
       unknown_frees unknown_freed_bytes net_change_bytes].each do |k|
      header[k] = dumps.sum { |d| d.header[k].to_i } if dumps.all? { |d| d.header[k] }
    end
    %w[age_unit stack_sample_bytes].each { |k| header[k] = dumps.first&.header&.dig(k) }
    alloc = dumps.map { |d| d.header["allocator"] }.uniq
    header["allocator"] = alloc.first if alloc.size == 1
    # the longest window; sampled figures where any source sampled
    %w[seconds sample_bytes].each { |k| header[k] = dumps.filter_map { |d| d.header[k] }.max }
    header.merge!(merged_held(dumps, names))
    %w[library_dirs app_dirs].each { |k| header[k] = dumps.flat_map { |d| Array(d.header[k]) }.uniq }
    mappings = dumps.flat_map { |d| Array(d.mappings) }.uniq { |m| [m["path"], m["build_id"], m["start"]] }
    Dump.new(header: header.compact, sites: sites, stacks: merged_stacks(dumps, names),
             series: series.empty? || series.size < dumps.size ? nil : MwrapGrowth::Series.merge(series),
             mappings: mappings.empty? ? nil : mappings)
  end

  # Why DUMP does not split its live bytes into held and in flight, or
  # nil when it does.
  def self.held_missing(dump)
    return "taken as the process exited" if dump.header["at_exit"]
    return "no held bytes in it (no Ruby, or a dump --top answer)" unless dump.header.key?("held_gc_count")

    nil
  end

  # The header fields of a merge of DUMPS (sources NAMES) that say how
  # its held bytes were counted: each source's own threshold made its
  # held bytes (the largest said), or which sources have none (nothing
  # where none could: no Ruby anywhere).
  def self.merged_held(dumps, names)
    missing = dumps.zip(names).filter_map { |d, n| (why = held_missing(d)) && { "source" => n, "why" => why } }
    return {} if dumps.none? { |d| d.header.key?("held_gc_count") }
    return { "held_missing" => missing } unless missing.empty?

    out = %w[held_gc_count held_min_age held_window_gcs].to_h { |k| [k, dumps.map { |d| d.header[k] }.compact.max] }
    none = dumps.zip(names).reject { |d, _| d.sites.any? { |s| s[:held].to_i.positive? } }.map(&:last)
    out["held_none"] = none unless none.empty? || none.size == dumps.size
    out
  end

  # Record S as source NAME's alone (its part is all of it).
  def self.tagged(s, name)
    s.merge(sources: { name => s.slice(*SCALED).compact })
  end

  # Adds record S's parts to ROW's, each figure times FACTORS' (or 1).
  def self.add_sources(row, s, factors = nil)
    s[:sources]&.each do |name, part|
      mine = (row[:sources] ||= {})[name] ||= {}
      part.each { |k, v| mine[k] = (mine[k] || 0) + v * (factors ? factors[k] : 1) }
    end
  end

  # The stack records of a merge of DUMPS (sources NAMES), or nil: each
  # source's scaled to its own lines' exact figures, so that its part of
  # a row is its own bytes.  A line a source has bytes on but sampled no
  # stack of, where others did, takes their stacks in their ratio, scaled
  # to its bytes there (a fleet runs one application: its callers split
  # alike), tagged as its own; so the merged stacks of each line sum to
  # its merged bytes, source by source.
  def self.merged_stacks(dumps, names)
    own = dumps.map do |d|
      f = exact_factors(d)
      Array(d.stacks).map { |s| scaled(s, f[frame_location(s[:stack].first)]) }
    end
    return nil if own.all?(&:empty?)

    by_line = own.flatten.group_by { |s| frame_location(s[:stack].first) }
    out = []
    dumps.each_with_index do |d, i|
      out.concat(own[i].map { |s| tagged(s, names[i]) })
      mine = own[i].to_h { |s| [frame_location(s[:stack].first), true] }
      d.sites.each do |site|
        others = by_line[site[:location]]
        next if site[:stack] || mine[site[:location]] || others.nil? || site[:live].to_i.zero?

        est = SCALED.to_h { |k| [k, others.sum { |s| s[k].to_i }] }
        f = factors(site, est)
        out.concat(others.map { |s| tagged(scaled(s, f), names[i]) })
      end
    end
    sum_by(out) { |s| s[:stack].join("\n") }
  end

  # How many sources a row's line names.
  SOURCES_SHOWN = 3

  # Where ROW's bytes (held with HELD, else live) come from in merged
  # DUMP: "in 2 of 3 sources: a.json 28.5 MiB (75%), b.json 9.5 MiB
  # (25%)", the heaviest first; a row that holds nothing, its bytes in
  # flight ("in flight in 2 of 3 ..."); nil for a row of one dump.
  def self.sources_words(dump, row, held)
    parts, flight = source_split(dump, row, held)
    return nil unless parts

    sum = parts.sum(&:last)
    words = parts.first(SOURCES_SHOWN).map { |n, b| format("%s %s (%.0f%%)", n, human(b), 100.0 * b / sum) }
    rest = parts.drop(SOURCES_SHOWN).sum(&:last)
    words << format("%d more %s (%.0f%%)", parts.size - SOURCES_SHOWN, human(rest), 100.0 * rest / sum) if
      parts.size > SOURCES_SHOWN
    format("%sin %d of %d %s: %s", flight, parts.size, dump.header["sources"].size,
           dump.header["sources_noun"] || "sources", words.join(", "))
  end

  # ROW's parts in merged DUMP (source_parts) and what they are: held
  # bytes with HELD, else live, and where the row holds nothing its live
  # bytes ("in flight "); nil for a row of one dump, or of no bytes.
  def self.source_split(dump, row, held)
    return nil if Array(dump.header["sources"]).size < 2 || !row[:sources]

    parts = source_parts(row, held)
    parts, what = source_parts(row, false), "in flight " if parts.empty? && held
    parts.empty? ? nil : [parts, what]
  end

  # What a report's title names: the pid, or a merge's sources.
  def self.title_of(dump)
    names = Array(dump.header["sources"]).map { |s| s["name"] }
    return "pid #{dump.header['pid']}" if names.size < 2

    "merged view of #{names.size} #{dump.header['sources_noun'] || 'sources'}: #{names.join(', ')}"
  end

  # ROW's parts as [[source, bytes]], the heaviest first, those with
  # none left out: held bytes with HELD, else live.
  def self.source_parts(row, held)
    key = held ? :held : :live
    Array(row[:sources]).map { |n, pt| [n, pt[key].to_f.round] }.select { |_, b| b.positive? }
                        .sort_by { |n, b| [-b, n] }
  end

  # Growth per site between two dumps (like tracemalloc's compare_to):
  # new minus old, sites only in one dump count from zero.
  def self.diff(old, new)
    before = old.sites.to_h { |s| [s[:location], s] }
    after = new.sites.to_h { |s| [s[:location], s] }
    (before.keys | after.keys).map do |loc|
      a = before[loc] || {}
      b = after[loc] || {}
      {
        location: loc,
        live: delta(b[:live] || b[:total], a[:live] || a[:total]),
        total: delta(b[:total], a[:total]),
        allocations: delta(b[:allocations], a[:allocations]),
        frees: delta(b[:frees], a[:frees]),
        new: a.empty?, gone: b.empty?,
      }
    end
  end

  def self.delta(b, a)
    (b || 0) - (a || 0)
  end

  def self.diff_text(old, new, rows)
    out = +"mwrap diff: #{header_lines(old.header).first} -> #{header_lines(new.header).first}\n"
    out << format("%14s %14s %12s %10s  %s\n", "live_growth", "total_growth", "allocations", "frees", "location")
    rows.each do |r|
      mark = r[:new] ? " (new)" : r[:gone] ? " (gone)" : ""
      out << format("%+14d %+14d %+12d %+10d  %s%s\n", r[:live], r[:total], r[:allocations], r[:frees],
                    r[:location], mark)
    end
    out << format("(%d sites; live growth %+d bytes in all)\n", rows.size, rows.sum { |r| r[:live] })
  end
end
