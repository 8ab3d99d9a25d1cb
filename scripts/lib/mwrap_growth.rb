# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# Growth over a window: a per-second series of tracked live bytes, for
# all sites and for each of the top sites, and each site's trend (slope
# in bytes/s, and whether it was still rising at the end).  A leak rises
# steadily to the end; a cache warming up rises, then levels off: the
# final dump alone cannot tell them apart.
module MwrapGrowth
  # A site that grew at least this share of its slope over the whole
  # window during the last third is still rising.
  LATE_SHARE = 0.25
  # fewer points than this make no trend
  MIN_POINTS = 3

  # One window's samples: t (seconds since the window began), the
  # tracked live bytes of all sites then, and the live bytes of each
  # site that was in a sample's top (nil where a sample did not list it).
  class Series
    attr_reader :t, :live, :sites

    def initialize(t = [], live = [], sites = {})
      @t = t
      @live = live
      @sites = sites
    end

    # Adds a sample: T seconds in, LIVE tracked bytes, TOP {location =>
    # live bytes} of the sites the sample listed.
    def add(t, live, top)
      n = @t.size
      @t << t.round(2)
      @live << live
      @sites.each_value { |v| v << nil }
      top.each do |loc, bytes|
        (@sites[loc] ||= Array.new(n + 1))[n] = bytes
      end
    end

    def empty?
      @t.empty?
    end

    # The series as a JSON record (type "series").
    def to_h
      { "type" => "series", "t" => @t, "live_bytes" => @live, "sites" => @sites }
    end

    # A series from its JSON record.
    def self.from_h(obj)
      new(Array(obj["t"]), Array(obj["live_bytes"]), (obj["sites"] || {}).to_h)
    end

    # Several processes' series, whose windows ran side by side, as one:
    # sample by sample, the longest one's times, bytes summed where known
    # (a process whose series ended counts with its last total).
    def self.merge(list)
      n = list.map { |s| s.t.size }.max || 0
      live = (0...n).map { |i| list.sum { |s| s.live[i] || s.live.last || 0 } }
      sites = {}
      list.each do |s|
        s.sites.each do |loc, ys|
          acc = (sites[loc] ||= Array.new(n))
          ys.each_with_index { |y, i| acc[i] = (acc[i] || 0) + y if y }
        end
      end
      new(list.max_by { |s| s.t.size }&.t.dup || [], live, sites)
    end

    # LOCATION's trend, or nil when it has too few samples.
    def trend_of(location)
      ys = @sites[location]
      ys && MwrapGrowth.trend(@t, ys)
    end

    # The trend of all tracked live bytes.
    def total_trend
      MwrapGrowth.trend(@t, @live)
    end
  end

  # Least-squares slope of YS over TS (pairs with a nil y left out), in
  # units of y per unit of t; nil with fewer than MIN_POINTS points.
  def self.slope(ts, ys)
    pts = ts.zip(ys).reject { |_, y| y.nil? }
    return nil if pts.size < MIN_POINTS

    mt = pts.sum { |t, _| t } / pts.size.to_f
    my = pts.sum { |_, y| y } / pts.size.to_f
    den = pts.sum { |t, _| (t - mt)**2 }
    return 0.0 if den.zero?

    pts.sum { |t, y| (t - mt) * (y - my) } / den
  end

  # { slope: bytes/s over the whole series, late: over its last third,
  #   state: "rising" | "levelled" | "falling" | "flat" }, or nil.
  def self.trend(ts, ys)
    all = slope(ts, ys)
    return nil unless all

    known = ts.zip(ys).reject { |_, y| y.nil? }
    last = known.last(known.size / 3)
    late = slope(last.map(&:first), last.map(&:last))
    { slope: all, late: late, state: state(all, late) }
  end

  def self.state(all, late)
    return "flat" if all.abs < 1
    return "falling" if all.negative?
    return "rising" if late.nil? || late >= LATE_SHARE * all

    "levelled"
  end

  # "+1.2 MiB/s rising", for a trend from trend().
  def self.words(tr, human)
    return "-" unless tr

    rate = tr[:slope]
    sign = rate.negative? ? "-" : "+"
    "#{sign}#{human.call(rate.abs.round)}/s #{tr[:state]}"
  end
end
