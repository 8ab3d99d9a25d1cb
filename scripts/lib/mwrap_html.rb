# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# A dump as one self-contained HTML page (no network): the header
# figures, the window's growth (inline SVG: tracked live bytes and the
# top sites' over time), a chart of live bytes by file and line (one bar
# per file, split into its lines), and a table sortable by any column
# (a few lines of JavaScript; #sort=COLUMN in the URL sorts on load).
# Sizes read as KiB/MiB with the exact bytes on hover; each site's share
# of all live bytes; long paths wrap at their slashes (full text on hover)
# so the table fits a 1400 px window.  A dump with stacks adds a flame
# graph of live bytes by stack, rooted at the allocation (lib/
# mwrap_flame_html.rb).
require "cgi"
require_relative "mwrap_report"
require_relative "mwrap_flame_html"

module MwrapHtml
  COLUMNS = [%w[live live_bytes], %w[share share], %w[live_count live_count], %w[total total_bytes],
             %w[allocations allocations], %w[frees frees], %w[mean_life mean_lifespan],
             %w[location location]].freeze
  BYTES = %w[live_bytes held_bytes total_bytes unreferenced].freeze
  COUNTS = %w[live_count allocations frees].freeze
  # chart labels longer than this keep their tail (the file name)
  LABEL_CHARS = 90
  COLORS = %w[#4e79a7 #f28e2b #e15759 #76b7b2 #59a14f #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac].freeze

  def self.h(s)
    CGI.escapeHTML(s.to_s)
  end

  # 12345678 -> "12,345,678"
  def self.grouped(n)
    n.to_s.gsub(/(\d)(?=(\d{3})+\z)/, '\1,')
  end

  def self.shorten(text, max = LABEL_CHARS)
    text.size > max ? "…#{text[-(max - 1)..]}" : text
  end

  # Live bytes by file, each split by line: [[file, total, [[line, bytes]]]].
  def self.by_file(sites)
    files = Hash.new { |hash, k| hash[k] = Hash.new(0) }
    sites.each do |s|
      next unless s[:live].to_i.positive?

      file, line = s[:location] =~ /\A(.*):(\d+)\z/ ? [$1, $2] : [s[:location], nil]
      files[file][line] += s[:live]
    end
    files.map { |f, lines| [f, lines.values.sum, lines.sort_by { |_, b| -b }] }
         .sort_by { |_, total, _| -total }
  end

  def self.chart(sites, top: 12)
    files = by_file(sites).first(top)
    return "<p>No live bytes recorded.</p>" if files.empty?

    max = files.map { |_, total, _| total }.max.to_f
    width = 900
    svg = +"<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"#{width + 20}\" " \
           "height=\"#{files.size * 44 + 10}\" role=\"img\" aria-label=\"live bytes by file and line\">"
    files.each_with_index do |(file, total, lines), i|
      y = 10 + i * 44
      svg << "<text x=\"0\" y=\"#{y + 10}\" font-size=\"12\"><title>#{h(file)}: #{grouped(total)} bytes" \
             "</title>#{h(shorten(file))} — #{h(MwrapReport.human(total))}</text>"
      x = 0.0
      lines.each_with_index do |(line, bytes), j|
        w = width * bytes / max
        label = line ? "#{file}:#{line}" : file
        svg << "<rect class=\"seg\" x=\"#{x.round(1)}\" y=\"#{y + 16}\" width=\"#{[w, 0.5].max.round(1)}\" " \
               "height=\"20\" fill=\"#{COLORS[j % COLORS.size]}\"><title>#{h(label)}: #{grouped(bytes)} bytes</title></rect>"
        svg << "<text x=\"#{(x + 3).round(1)}\" y=\"#{y + 31}\" font-size=\"11\" fill=\"#fff\">" \
               "#{h(":#{line}")}</text>" if line && w > 40
        x += w
      end
    end
    svg << "</svg>"
  end

  # sites drawn in the growth chart beside the total
  GROWTH_SITES = 5

  # The window's series as lines over time: all tracked live bytes (black)
  # and the GROWTH_SITES sites with most live bytes at the end, each
  # labelled with its trend; with --gc, each one's drop at the GC dashed
  # (not part of its line).  "" without a series.
  def self.growth_chart(series, sites)
    return "" if series.nil? || series.t.size < 2

    w = 900
    ht = 260
    pad = 60
    t_max = [series.t.last.to_f, 1e-9].max
    y_max = [series.live.compact.max.to_i, 1].max
    x = ->(t) { (pad + (w - pad) * t / t_max).round(1) }
    y = ->(v) { (10 + ht - ht * v.to_f / y_max).round(1) }
    lines = [["all tracked live bytes", series.live, "#222", series.total_trend]]
    sites.filter_map { |s| (ys = series.ys_for(s)) && [s, ys] }.first(GROWTH_SITES).each_with_index do |(s, ys), i|
      lines << [s[:location], ys, COLORS[i], series.trend_for(s)]
    end
    svg = +"<svg id=\"growth\" xmlns=\"http://www.w3.org/2000/svg\" width=\"#{w + 20}\" " \
           "height=\"#{ht + 40 + lines.size * 18}\" role=\"img\" aria-label=\"live bytes over the window\">"
    svg << "<line x1=\"#{pad}\" y1=\"#{ht + 10}\" x2=\"#{w}\" y2=\"#{ht + 10}\" stroke=\"#999\"/>"
    svg << "<line x1=\"#{pad}\" y1=\"10\" x2=\"#{pad}\" y2=\"#{ht + 10}\" stroke=\"#999\"/>"
    svg << "<text x=\"0\" y=\"20\" font-size=\"11\">#{h(MwrapReport.human(y_max))}</text>"
    svg << "<text x=\"0\" y=\"#{ht + 10}\" font-size=\"11\">0</text>"
    svg << "<text x=\"#{w - 40}\" y=\"#{ht + 25}\" font-size=\"11\">#{format('%.0f s', t_max)}</text>"
    lines.each_with_index do |(label, ys, color, tr), i|
      pts = series.t.zip(ys).each_with_index.reject { |(_, v), j| v.nil? || j == series.gc }
                    .map { |(t, v), _| "#{x.call(t)},#{y.call(v)}" }
      trend = MwrapGrowth.words(tr, MwrapReport.method(:human))
      if series.gc && ys[series.gc] && !pts.empty?
        # the GC's drop, dashed: the trend reads the line as scaled to it
        gx = x.call(series.t[series.gc])
        gy = y.call(ys[series.gc])
        svg << "<g class=\"after-gc\"><title>#{h(label)}: #{h(MwrapReport.human(ys[series.gc]))} after the GC " \
               "(not read as a fall: the trend counts what the GC kept)</title>" \
               "<polyline fill=\"none\" stroke=\"#{color}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" " \
               "points=\"#{pts.last} #{gx},#{gy}\"/><circle cx=\"#{gx}\" cy=\"#{gy}\" r=\"3\" fill=\"#{color}\"/></g>"
      end
      svg << "<polyline class=\"series\" fill=\"none\" stroke=\"#{color}\" stroke-width=\"2\" " \
             "points=\"#{pts.join(' ')}\"><title>#{h(label)}: #{h(trend)}</title></polyline>"
      ly = ht + 45 + i * 18
      svg << "<rect x=\"#{pad}\" y=\"#{ly - 10}\" width=\"12\" height=\"12\" fill=\"#{color}\"/>"
      svg << "<text x=\"#{pad + 18}\" y=\"#{ly}\" font-size=\"12\"><title>#{h(label)}</title>" \
             "#{h(shorten(label))} — #{h(trend)}</text>"
    end
    svg << "</svg>"
  end

  # A cell's sort value: numbers as they are, nil as "".
  def self.cell(site, key, live_total)
    case key
    when "share"
      site[:live] && live_total.positive? ? (100.0 * site[:live] / live_total).round(1) : nil
    when "mean_lifespan"
      m = MwrapReport.mean_lifespan(site)
      m.nil? ? "" : m.infinite? ? "Infinity" : format("%.1f", m)
    when "location" then site[:location]
    when "live_bytes" then site[:live]
    when "held_bytes" then site[:held]
    when "total_bytes" then site[:total]
    when "unreferenced" then MwrapReport.unreferenced(site)
    else site[key.to_sym]
    end
  end

  # With a pointer scan, the unreferenced (leaked) estimate after
  # live_count; with a window's series, each row's growth before its
  # location.
  def self.columns(dump)
    cols = COLUMNS.dup
    cols.insert(1, %w[held held_bytes]) if MwrapReport.held?(dump)
    cols.insert(3, %w[unreferenced unreferenced]) if dump.scan
    cols.insert(-2, %w[growth growth]) if dump.series && !dump.series.empty?
    cols
  end

  # A row's growth cell: sorted by its slope, read as "+1.2 MiB/s
  # rising", the slope's standard error and the series' noise on hover.
  def self.growth_td(tr)
    return "<td data-v=\"\">-</td>" unless tr

    words = MwrapGrowth.words(tr, MwrapReport.method(:human))
    title = format("%s bytes/s, standard error %s, noise %s bytes a sample", grouped(tr[:slope].round),
                   tr[:stderr] ? grouped(tr[:stderr].round) : "-", grouped(tr[:noise].round))
    "<td class=\"growth #{tr[:state]}\" data-v=\"#{tr[:slope].round(1)}\" title=\"#{h(title)}\">#{h(words)}</td>"
  end

  # One <td>: data-v holds the value the script sorts by, the text what
  # a person reads, the title what the text leaves out; UNDER: lines
  # under a location (callers_html, sources_html).
  def self.td(key, v, under = "")
    if v.nil? then "<td data-v=\"\"></td>"
    elsif BYTES.include?(key)
      "<td data-v=\"#{v}\" title=\"#{grouped(v)} bytes\">#{h(MwrapReport.human(v))}</td>"
    elsif COUNTS.include?(key) then "<td data-v=\"#{v}\">#{grouped(v)}</td>"
    elsif key == "share" then "<td data-v=\"#{v}\">#{format('%.1f', v)}%</td>"
    elsif key == "location"
      # <wbr>: a long path may wrap after any of its slashes
      "<td class=\"loc\" data-v=\"#{h(v)}\" title=\"#{h(v)}\">#{h(v).gsub('/', '/<wbr>')}#{under}</td>"
    else "<td data-v=\"#{h(v)}\">#{h(v)}</td>"
    end
  end

  # A library line's application callers, under its location.
  def self.callers_html(callers)
    return "" unless callers&.any?

    items = callers.first(MwrapReport::CALLERS_SHOWN).map do |loc, share|
      "<div class=\"caller\">called from #{h(MwrapReport.caller_words(loc, share)).gsub('/', '/<wbr>')}</div>"
    end
    items.join
  end

  # Where a merged DUMP's ROW comes from (MwrapReport.sources_words),
  # under its location, each source's figures on hover; "" elsewhere.
  def self.sources_html(dump, row, held)
    words = MwrapReport.sources_words(dump, row, held)
    return "" unless words

    title = MwrapReport.source_split(dump, row, held)[0].map { |n, b| "#{n}: #{grouped(b)} bytes" }.join("\n")
    "<div class=\"sources\" title=\"#{h(title)}\">#{h(words)}</div>"
  end

  # A merged DUMP's sources (MwrapReport.merge of DUMPS), one row each:
  # its name, pid and host, window, tracked live and held bytes, and the
  # line holding most; "" for one dump.
  def self.sources(dump, dumps)
    names = Array(dump.header["sources"])
    return "" if names.size < 2 || dumps.nil?

    html = +"<h2>Sources</h2>\n<table id=\"sources\"><thead><tr>"
    %w[source pid host window live_bytes held_bytes holds_most].each { |c| html << "<th>#{c}</th>" }
    html << "</tr></thead><tbody>"
    names.zip(dumps).each do |src, d|
      held = MwrapReport.held?(d)
      first = MwrapReport.app_rows(d).first || MwrapReport.select(d.sites, sort: MwrapReport.default_sort(d)).first
      html << "<tr><td class=\"loc\">#{h(src['name'])}</td><td>#{h(src['pid'])}</td><td>#{h(src['host'])}</td>"
      html << "<td>#{d.header['seconds'] ? format('%.1f s', d.header['seconds'].to_f) : ''}</td>"
      html << td("live_bytes", d.sites.sum { |s| s[:live].to_i })
      html << td("held_bytes", held ? d.sites.sum { |s| s[:held].to_i } : nil)
      html << td("location", first && first[:location])
      html << "</tr>"
    end
    html << "</tbody></table>"
  end

  # live_total: all sites' live bytes, what the share column divides by;
  # series: the window's, for the growth column (of what each site
  # holds, with held).
  # dump: a merged one, for each row's sources.
  def self.table(sites, columns = COLUMNS, live_total: sites.sum { |s| s[:live] || 0 }, series: nil, held: false,
                 dump: nil)
    html = +"<table id=\"sites\"><thead><tr>"
    columns.each { |id, label| html << "<th data-col=\"#{id}\"><a href=\"#sort=#{id}\">#{label}</a></th>" }
    html << "</tr></thead><tbody>"
    sites.each do |s|
      html << "<tr>"
      columns.each do |_, key|
        under = key == "location" ? callers_html(s[:callers]) + (dump ? sources_html(dump, s, held) : "") : ""
        html << (key == "growth" ? growth_td(series&.trend_for(s, held: held)) : td(key, cell(s, key, live_total), under))
      end
      html << "</tr>"
    end
    html << "</tbody></table>"
  end

  # The application's lines (MwrapReport.app_rows), the page's first
  # table: what each holds, what it has in flight, its growth, and under
  # its location the library lines it allocates in and its callers.
  def self.apps(dump, focus: nil)
    rows = MwrapReport.app_rows(dump, focus: focus)
    return "" if rows.empty?

    held = MwrapReport.held?(dump)
    what = held ? "what they hold (held, above)" : "their live bytes"
    html = +"<h2>The application's lines</h2>\n<p>Ranked by #{what} " \
            "(estimates from the sampled stacks).</p>\n<table id=\"apps\"><thead><tr>"
    heads = [held ? "held_bytes" : "live_bytes"]
    heads << "in_flight" if held
    heads << "growth" if dump.series && !dump.series.empty?
    (heads + ["location"]).each { |t| html << "<th>#{t}</th>" }
    html << "</tr></thead><tbody>"
    rows.each do |r|
      html << "<tr>" << td("live_bytes", MwrapReport.rank_bytes(r, held))
      html << td("live_bytes", [r[:live] - r[:held], 0].max) if held
      html << growth_td(r[:trend]) if heads.include?("growth")
      under = r[:reaches].first(MwrapReport::CALLERS_SHOWN).map { |l, sh| ["allocating in", l, sh] } +
              r[:callers].first(MwrapReport::CALLERS_SHOWN).map { |l, sh| ["called from", l, sh] }
      words = under.map do |w, l, sh|
        "<div class=\"caller\">#{w} #{h(MwrapReport.caller_words(l, sh)).gsub('/', '/<wbr>')}</div>"
      end
      html << "<td class=\"loc\" title=\"#{h(r[:location])}\">#{h(r[:location]).gsub('/', '/<wbr>')}" \
              "#{sources_html(dump, r, held)}#{words.join}</td></tr>"
    end
    html << "</tbody></table>"
  end

  SCRIPT = <<~JS
    // Sorts the sites table by a column: numbers descending, text ascending;
    // the column's header is marked (class "sorted", aria-sort).
    function sortBy(col) {
      var table = document.getElementById("sites");
      var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
      var idx = heads.findIndex(function (c) { return c.dataset.col === col; });
      if (idx < 0) return;
      heads.forEach(function (c, i) {
        c.classList.toggle("sorted", i === idx);
        if (i === idx) c.setAttribute("aria-sort", col === "location" ? "ascending" : "descending");
        else c.removeAttribute("aria-sort");
      });
      var rows = Array.prototype.slice.call(table.tBodies[0].rows);
      rows.sort(function (a, b) {
        var x = a.cells[idx].dataset.v, y = b.cells[idx].dataset.v;
        var nx = parseFloat(x), ny = parseFloat(y);
        if (col !== "location" && !isNaN(nx) && !isNaN(ny)) return ny - nx;
        return x < y ? -1 : x > y ? 1 : 0;
      });
      rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
      document.body.dataset.sorted = col;
    }
    function fromHash() {
      var m = /sort=([a-z_]+)/.exec(location.hash);
      sortBy(m ? m[1] : document.body.dataset.rank);
    }
    window.addEventListener("hashchange", fromHash);
    fromHash();
  JS

  # FOCUS: --focus's prefix (which frames are the application's in the
  # flame graph), nil for the default (outside the library).  DUMPS: a
  # merged DUMP's sources, for their table.
  def self.page(dump, sites, window: nil, focus: nil, dumps: nil)
    series = dump.series unless dump.series&.empty?
    head = MwrapReport.header_lines(dump.header, window: window, series: series)
    jit = MwrapReport.jit_line(dump)
    head += [jit] if jit
    head += MwrapReport.held_lines(dump)
    growth = growth_chart(series, sites)
    growth = "<h2>Growth over the window</h2>\n#{growth}" unless growth.empty?
    flame = MwrapFlameHtml.section(dump, focus: focus)
    flame = "<h2>Live bytes by stack</h2>\n#{flame}" unless flame.empty?
    # the object view and the scan summary, as in the text report
    head += MwrapReport.objects_text(dump.objects).lines.map(&:chomp) if dump.objects
    head += MwrapReport.scan_text(dump).lines.map(&:chomp) if dump.scan
    <<~HTML
      <!DOCTYPE html>
      <html><head><meta charset="utf-8"><title>mwrap report: #{h(MwrapReport.title_of(dump))}</title>
      <style>
      body{font-family:sans-serif;margin:1.5em;color:#222}
      table{border-collapse:collapse;margin-top:1em}
      td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right;white-space:nowrap}
      td.loc{text-align:left;font-family:monospace;white-space:normal;max-width:48em;overflow-wrap:anywhere}
      th a{text-decoration:none;color:#1a4f8b}
      th[data-col=location]{text-align:left}
      th.sorted{background:#e8eef7}
      th.sorted a::after{content:" \\25BC"}
      th.sorted[aria-sort=ascending] a::after{content:" \\25B2"}
      .head{font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere}
      .caller,.sources{color:#555;font-size:90%;padding-left:1.5em}
      #{MwrapFlameHtml::STYLE.chomp}
      </style></head><body data-rank="#{MwrapReport.default_sort(dump)}">
      <h1>mwrap report</h1>
      <div class="head">#{head.map { |l| h(l) }.join("\n")}</div>
      #{sources(dump, dumps)}
      #{apps(dump, focus: focus)}
      #{growth}
      #{flame}
      <h2>Live bytes by file and line</h2>
      #{chart(sites)}
      <h2>Sites</h2>
      #{table(sites, columns(dump), live_total: dump.sites.sum { |s| s[:live] || 0 }, series: series,
              held: MwrapReport.held?(dump), dump: dump)}
      <script>#{SCRIPT}</script>
      </body></html>
    HTML
  end
end
