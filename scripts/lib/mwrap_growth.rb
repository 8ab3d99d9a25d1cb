# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# Growth over a window: a series of tracked live bytes (a sample every
# half second), for all sites and for each of the top sites, and each
# site's trend (slope in bytes/s, and whether it was still rising at the
# end).  A leak rises steadily to the end; a cache warming up rises, then
# levels off: the final dump alone cannot tell them apart.
#
# A label is a claim about the series, so it changes only on evidence
# larger than the series' own noise: each slope is weighed against its
# standard error, the noise measured from the series itself (the spread
# of its sample-to-sample changes, which one step does not inflate).
# The same buffer, jumping once then holding still, reads the same in
# window after window.
module MwrapGrowth
  # fewer points than this make no trend
  MIN_POINTS = 4
  # the late part of a series: its last third, and at least its last
  # LATE_SECONDS and its last LATE_POINTS points
  LATE_POINTS = 3
  LATE_SECONDS = 2.0
  # a late slope below this share of the rate the site grew at until
  # then has slowed down: the site levelled off, however sure the slope
  LATE_SHARE = 0.25
  # A measure counts as a change when it is more than ENTER standard
  # errors from 0, as none when it is less than STAY: between them the
  # evidence is unclear and the label stays what it was (hysteresis).
  # These are for a noise measured from many samples; thresholds()
  # widens them for few.
  ENTER = 3.0
  STAY = 2.0
  # the largest sample-to-sample change is a step, not noise, when it is
  # more than this many times the others' root mean square
  STEP = 4.0
  # the noise taken for a series with none: a share of its largest
  # value, and at least a few bytes (malloc's own granularity)
  NOISE_FLOOR_SHARE = 0.001
  NOISE_FLOOR_BYTES = 64

  # One window's samples: t (seconds since the window began), the
  # tracked live bytes of all sites then, the live bytes of each site
  # (by line) that was in a sample's top (nil where a sample did not
  # list it), and for each sample the most a site it did not list could
  # hold (unlisted: see MwrapGrowth.fill).  gc is the index of a last
  # sample taken after a full GC (--gc), or nil.
  class Series
    attr_reader :t, :live, :sites, :unlisted, :gc

    def initialize(t = [], live = [], sites = {}, unlisted: nil, gc: nil)
      @t = t
      @live = live
      @sites = sites
      @unlisted = unlisted
      @gc = gc
    end

    # Adds a sample: T seconds in, LIVE tracked bytes, TOP {location =>
    # live bytes} of the sites the sample listed, UNLISTED the most a
    # site it left out could hold (nil: unknown).
    def add(t, live, top, unlisted = nil)
      n = @t.size
      @t << t.round(2)
      @live << live
      @sites.each_value { |v| v << nil }
      top.each do |loc, bytes|
        (@sites[loc] ||= Array.new(n + 1))[n] = bytes
      end
      (@unlisted ||= Array.new(n)) << unlisted
    end

    # Adds the sample taken after --gc's full GC: T seconds in, LIVE
    # tracked bytes, ALL {location => live bytes} of every site (the
    # final dump lists them all).  It is not a trend point: see trend().
    def add_after_gc(t, live, all)
      add([t, @t.last.to_f].max, live, all, 0)
      @gc = @t.size - 1
    end

    def empty?
      @t.empty?
    end

    # The series as a JSON record (type "series").
    def to_h
      h = { "type" => "series", "t" => @t, "live_bytes" => @live, "sites" => @sites }
      h["unlisted_max"] = @unlisted if @unlisted&.any?
      h["gc_sample"] = @gc if @gc
      h
    end

    # A series from its JSON record.
    def self.from_h(obj)
      new(Array(obj["t"]), Array(obj["live_bytes"]), (obj["sites"] || {}).to_h,
          unlisted: obj["unlisted_max"], gc: obj["gc_sample"])
    end

    # Several processes' series, whose windows ran side by side, as one:
    # sample by sample, the longest one's times, bytes summed: each
    # process's unlisted samples filled first (fill), a sample one of
    # them does not know is unknown in the sum, a process whose series
    # ended counts with its last value, and one that never listed a site
    # counts as holding none there (it held at most its smallest listed
    # site's bytes).  Samples after --gc's GC are summed into one, last.
    def self.merge(list)
      return new if list.empty?

      pre = list.map { |s| s.gc || s.t.size }
      n = pre.max
      # sample I of the K-th series, or its last one before any GC
      at = ->(ys, k, i) { ys[[i, pre[k] - 1].min] }
      after = ->(ys, k) { ys[list[k].gc || (pre[k] - 1)] }
      live = (0...n).map { |i| list.each_index.sum { |k| at.call(list[k].live, k, i).to_i } }
      sites = {}
      gc_sites = {}
      list.flat_map { |s| s.sites.keys }.uniq.each do |loc|
        ys = list.each_index.filter_map { |k| (f = list[k].filled(loc)) && [f, k] }
        sites[loc] = (0...n).map do |i|
          parts = ys.map { |f, k| at.call(f, k, i) }
          parts.include?(nil) ? nil : parts.sum
        end
        gc_sites[loc] = ys.sum { |f, k| after.call(f, k).to_i }
      end
      merged = new(list[pre.index(n)].t.first(n), live, sites)
      if list.any?(&:gc)
        merged.add_after_gc(list.each_index.map { |k| after.call(list[k].t, k).to_f }.max,
                            list.each_index.sum { |k| after.call(list[k].live, k).to_i }, gc_sites)
      end
      merged
    end

    # LOCATION's live bytes at each sample, its unlisted samples filled
    # as far as the samples tell (MwrapGrowth.fill); nil for a location
    # the series never listed.
    def filled(location)
      ys = @sites[location]
      ys && MwrapGrowth.fill(ys, @unlisted)
    end

    # ROW's live bytes at each sample (a report's row: { location:, and
    # with --focus or --group parts: { line => share } }), or nil when
    # none of its lines was listed.  A row of parts of several lines
    # (stacks named by a focused frame, a file's lines) sums the lines'
    # series weighted by the row's share of each line's live bytes at
    # the end, each share taken as constant over the window.
    def ys_for(row)
      return filled(row[:location]) unless row[:parts]

      lines = row[:parts].filter_map { |loc, share| (ys = filled(loc)) && [ys, share] }
      return nil if lines.empty?

      (0...@t.size).map do |i|
        vals = lines.map { |ys, share| ys[i] && ys[i] * share }
        vals.include?(nil) ? nil : vals.sum.round
      end
    end

    # ROW's trend (see ys_for), or nil when it has too few samples.
    # With HELD (the dump splits live bytes into held and in flight) the
    # trend is that of what the row holds (see MwrapGrowth.trend).
    def trend_for(row, held: false)
      ys = ys_for(row)
      ys && MwrapGrowth.trend(@t, ys, gc: @gc, held: held ? row[:held].to_i : nil)
    end

    # The trend of all tracked live bytes.
    def total_trend
      MwrapGrowth.trend(@t, @live, gc: @gc)
    end
  end

  # A site's samples YS with those that did not list it filled where the
  # samples tell its value, as far as UNLISTED (the most a site left out
  # of each sample could hold) allows:
  # - a sample that listed fewer sites than its top listed every site
  #   there was (UNLISTED 0): one it left out had made no allocation yet
  #   and held 0 (the window's table starts empty);
  # - otherwise the site held at most UNLISTED, the smallest listed
  #   site's bytes.  Before its first listed value V it takes the highest
  #   value at or below V that every bound from there to V allows (the
  #   smallest rise the samples prove: it rose by at least that), after
  #   its last listed value W likewise (the smallest fall), and between
  #   two listed values the shallowest dip their bounds prove.  Where the
  #   bounds allow its neighbours' own level, the sample proves nothing
  #   and stays nil (unknown).
  # A bound is per site: a line made of several sites (rare: only native
  # sites may share a name) may hold more, which this leaves out.
  def self.fill(ys, unlisted)
    return ys unless unlisted && ys.include?(nil) && ys.any?

    # from each side, the listed value next to each sample and the
    # highest path from it the bounds allow up to there
    left = bounded_path(ys, unlisted)
    right = bounded_path(ys.reverse, unlisted.reverse).reverse
    ys.each_index.map do |i|
      next ys[i] if ys[i] || unlisted[i].nil?

      path = [left[i], right[i]].compact
      v = path.map(&:last).max
      v < path.map(&:first).min || unlisted[i].zero? ? v : nil
    end
  end

  # For each unlisted sample of YS after a listed one: [that listed
  # value, the least of it and the bounds UNLISTED since]; nil elsewhere.
  def self.bounded_path(ys, unlisted)
    level = cap = nil
    ys.each_index.map do |i|
      if ys[i]
        level = cap = ys[i]
        next nil
      end
      cap = [cap, unlisted[i] || Float::INFINITY].min if cap
      level && [level, cap]
    end
  end

  def self.median(xs)
    s = xs.sort
    m = s.size / 2
    s.size.odd? ? s[m] : (s[m - 1] + s[m]) / 2.0
  end

  # Least-squares fits over runs of a series' points ([t, y]), each in
  # constant time from running sums, so that deciding a label sample by
  # sample stays linear in the window's length.  Times and bytes are
  # kept relative to the first point (for precision, and the rise is
  # measured from it).
  class Runs
    def initialize(pts)
      t0, y0 = pts.first
      @t = pts.map { |t, _| t - t0 }
      @sums = [[0.0, 0.0, 0.0, 0.0]]
      pts.each do |t, y|
        t -= t0
        y -= y0
        a = @sums.last
        @sums << [a[0] + t, a[1] + y, a[2] + t * t, a[3] + t * y]
      end
    end

    # Points I...J: [slope, sum of (t - mean t)^2, mean t, mean y], or
    # nil for fewer than 2 distinct times.
    def fit(i, j)
      n = (j - i).to_f
      st, sy, stt, sty = (0..3).map { |k| @sums[j][k] - @sums[i][k] }
      sxx = stt - st * st / n
      return nil unless sxx > 1e-12 * [stt, 1.0].max

      [(sty - st * sy / n) / sxx, sxx, st / n, sy / n]
    end

    # Where the late part of points 0...K begins: the window's last
    # third, and at least its last LATE_SECONDS and LATE_POINTS points.
    def late_from(k)
      from = @t[k - 1] - [@t[k - 1] / 3.0, LATE_SECONDS].max - 1e-9
      [(0...k).bsearch { |i| @t[i] >= from } || k, k - LATE_POINTS].min.clamp(0, k)
    end
  end

  # Student's t quantiles for 1..30 degrees of freedom: ENTER_T at
  # 99.865% (3 standard errors of normal noise, one-sided), STAY_T at
  # 97.7% (2): a noise measured from few samples is itself uncertain,
  # and the thresholds widen to keep the same odds of a false label.
  ENTER_T = [200.0, 19.21, 9.22, 6.62, 5.51, 4.9, 4.53, 4.28, 4.09, 3.96, 3.85, 3.76, 3.69, 3.64, 3.59,
             3.55, 3.51, 3.48, 3.45, 3.42, 3.40, 3.38, 3.36, 3.34, 3.33, 3.31, 3.30, 3.29, 3.28, 3.27].freeze
  STAY_T = [13.82, 4.5, 3.29, 2.86, 2.64, 2.51, 2.42, 2.36, 2.31, 2.28, 2.25, 2.23, 2.21, 2.19, 2.18,
            2.17, 2.16, 2.15, 2.14, 2.13, 2.12, 2.11, 2.11, 2.10, 2.10, 2.09, 2.09, 2.09, 2.08, 2.08].freeze

  # The thresholds [enter, stay] for a noise measured with DOF degrees
  # of freedom (beyond the table, the first term of t's expansion).
  def self.thresholds(dof)
    return [ENTER_T[dof - 1], STAY_T[dof - 1]] if dof.between?(1, ENTER_T.size)

    [ENTER, STAY].map { |z| z + (z**3 + z) / (4.0 * [dof, 1].max) }
  end

  # The series' noise: [the standard deviation of a sample about the
  # series' course, the degrees of freedom it was measured with].  It
  # comes from the sample-to-sample changes less the typical one (the
  # median rate times the interval: a ramp has no noise), their root
  # mean square over sqrt(2) (a change is the difference of two
  # samples' noise).  The largest change is left out when it is more
  # than STEP times the others' (a step: one change, not noise).  At
  # least the floor (NOISE_FLOOR_*).
  def self.noise(pts)
    steps = pts.each_cons(2).map { |(t0, y0), (t1, y1)| [t1 - t0, y1 - y0] }.select { |dt, _| dt.positive? }
    floor = [NOISE_FLOOR_BYTES, NOISE_FLOOR_SHARE * pts.map { |_, y| y.abs }.max].max
    return [floor, 1] if steps.size < 2

    rate = median(steps.map { |dt, dy| dy / dt })
    dev = steps.map { |dt, dy| dy - rate * dt }.sort_by(&:abs)
    rms = ->(xs) { Math.sqrt(xs.sum { |x| x * x } / [xs.size - 1, 1].max) }
    dev.pop if dev.size >= 3 && dev.last.abs > STEP * rms.call(dev[0..-2])
    [[rms.call(dev) / Math.sqrt(2), floor].max, [dev.size - 1, 1].max]
  end

  # The state the first K points of RUNS (Runs) give evidence for with
  # noise SIGMA (DOF its degrees of freedom), or nil when the evidence
  # is unclear (the state stays what it was).  Measures, each in
  # standard errors: the rise (the late part's mean less the first
  # sample: the window started empty); the late slope, above 0 ("up");
  # and how far it is below the rate the site grew at until then
  # ("slow", the rise over the time to the late part).  The thresholds
  # are ENTER and STAY (thresholds()):
  # - "falling": up below -ENTER, or a fall of more than ENTER with up
  #   below STAY;
  # - "rising": up above ENTER, not slowed to less than LATE_SHARE of
  #   the rate it grew at; or, after a rise, up above STAY and no sign of
  #   slowing (slow below STAY): growth seen, and no evidence it stopped;
  # - "levelled": after a rise, a late slope indistinguishable from 0
  #   (up below STAY) and below the rate it grew at (slow above STAY), or
  #   slowed by more than ENTER to less than LATE_SHARE of that rate;
  # - "flat": rise and up both within STAY.
  def self.evidence(runs, k, sigma, dof)
    enter, stay = thresholds(dof)
    from = runs.late_from(k)
    late, lxx, dt, gain = runs.fit(from, k)
    return nil unless late

    gain_se = sigma * Math.sqrt(1 + 1.0 / (k - from))
    rate = dt.positive? ? gain / dt : 0.0
    late_se = sigma / Math.sqrt(lxx)
    rise = gain / gain_se
    up = late / late_se
    slow = dt.positive? ? (rate - late) / Math.hypot(late_se, gain_se / dt) : 0.0
    fast = late >= LATE_SHARE * rate
    if up < -enter then "falling"
    elsif up > enter && fast then "rising"
    elsif rise > enter
      if (slow > stay && up < stay) || (slow > enter && !fast) then "levelled"
      elsif slow < stay && up > stay then "rising"
      end
    elsif rise < -enter && up < stay then "falling"
    elsif rise.abs < stay && up.abs < stay then "flat"
    end
  end

  # { slope: bytes/s over the whole series, late: over its late part,
  #   stderr: the slope's standard error, noise: a sample's,
  #   state: "rising" | "levelled" | "falling" | "flat" }, or nil with
  # fewer than MIN_POINTS points.
  # The state is decided sample by sample, as the window ran: it starts
  # "flat" and changes only where the samples so far give evidence for
  # another (evidence()), so one noisy sample near the end does not undo
  # what the window showed.
  # GC is the index of a sample taken after --gc's full GC: the GC is
  # ours, and what it freed was garbage all along, so that sample makes
  # no fall; instead each earlier sample is scaled by the share of the
  # last one the GC kept (garbage taken as a constant share of the site
  # over the window), so a site whose bytes were mostly garbage reads
  # as growing only by what it keeps.
  def self.trend(ts, ys, gc: nil, held: nil)
    pts = ts.each_index.filter_map { |i| [ts[i].to_f, ys[i].to_f] if ys[i] && i != gc }
    kept = gc && ys[gc] && pts.last && pts.last[1].positive? ? (ys[gc] / pts.last[1]).clamp(0.0, 1.0) : 1.0
    kept *= held_share(held, pts) if held
    pts = pts.map { |t, y| [t, y * kept] } if kept < 1
    return nil if pts.size < MIN_POINTS

    sigma, dof = noise(pts)
    runs = Runs.new(pts)
    state = "flat"
    (MIN_POINTS..pts.size).each { |k| state = evidence(runs, k, sigma, dof) || state }
    whole, sxx = runs.fit(0, pts.size) || [0.0, nil]
    late = runs.fit(runs.late_from(pts.size), pts.size)&.first
    { slope: whole, late: late, stderr: sxx ? sigma / Math.sqrt(sxx) : nil, noise: sigma,
      gc_kept: gc ? kept : nil, state: agreeing(state, pts, whole, late, sigma) }
  end

  # STATE made to agree with the figures printed beside it: a "rising"
  # series has a slope above 0 over the window (else it reads "flat", or
  # "falling" when it ended below its start), and a series that ended
  # more than ENTER times its noise above its start (the window's table
  # starts empty: that is what it kept) is not "flat" or "falling" but
  # "rising" while its late slope is above 0, else "levelled".
  def self.agreeing(state, pts, whole, late, sigma)
    rise = pts.last[1] - pts.first[1]
    if state == "rising" && whole <= 0
      rise.negative? ? "falling" : "flat"
    elsif %w[flat falling].include?(state) && rise > ENTER * sigma
      whole.positive? && late.to_f.positive? ? "rising" : "levelled"
    else
      state
    end
  end

  # The share of a series PTS that is held, from HELD bytes (lived
  # through a GC) at its end, over the level the series ran at late in
  # the window (its last value, or the median of its late part if
  # higher: garbage is in flight at any moment, and a GC just before the
  # dump leaves little of it at the end).  The series is then scaled by
  # it, the bytes in flight taken as a constant share over the window
  # (as --gc's kept share is): garbage reads flat, a leak as it grows.
  def self.held_share(held, pts)
    return 1.0 if pts.empty?

    late = pts.last([pts.size / 3, 1].max).map(&:last)
    level = [pts.last[1], median(late)].max
    level.positive? ? (held / level).clamp(0.0, 1.0) : 1.0
  end

  # "+1.2 MiB/s rising", for a trend from trend().
  def self.words(tr, human)
    return "-" unless tr

    rate = tr[:slope]
    sign = rate.negative? ? "-" : "+"
    "#{sign}#{human.call(rate.abs.round)}/s #{tr[:state]}"
  end
end
