# SPDX-License-Identifier: MIT
# frozen_string_literal: true

begin
  require "io/console"
rescue LoadError
  nil # a Ruby built without it: reports are 100 columns wide
end
require_relative "failure"
require_relative "../mwrap_growth"
require_relative "../mwrap_report"

module MwrapAttach
  # The sampling window: its growth series, its status display, its end
  # (time, Ctrl-C or TERM, or the target exiting: see exited.rb).
  module Window
    extend Fails

    # Ctrl-C or TERM from the injection on only end the window early, with
    # its report and detach: a signal before the window's loop would
    # otherwise kill us and leave the detach to the lease.  [flag, old].
    def self.trap_interrupts
      flag = { seen: false }
      old = %w[INT TERM].to_h { |sig| [sig, trap(sig) { flag[:seen] = true }] }
      [flag, old]
    end

    # sites per sample in the growth series
    SERIES_TOP = 20
    # seconds between its samples: a growth label weighs slopes against
    # the series' own noise, which takes samples to measure (a 4 s window
    # has 9)
    SERIES_EVERY = 0.5

    # Runs the window on CHAN until o[:seconds] passed, INTERRUPT was
    # seen or the target exited: [its length in seconds, its growth series
    # (MwrapGrowth::Series, a sample every SERIES_EVERY seconds), its last
    # sample (a dump of the top sites, or nil), whether the target exited].
    def self.run(target, chan, o, interrupt)
      started = Time.now
      series = MwrapGrowth::Series.new
      status = StatusPrinter.new(chan, o, started) unless o[:quiet_status]
      last = top = nil
      until interrupt[:seen] || Time.now - started >= o[:seconds]
        unless target.alive?
          status&.close
          return [Time.now - started, series, top, true]
        end

        if last.nil? || Time.now - last >= SERIES_EVERY
          last = Time.now
          now = sample(chan, series, last - started)
          top = now || top
          status&.tick(now)
        end
        sleep [0.1, o[:seconds] - (Time.now - started)].min.clamp(0.01, 0.1)
      end
      now = sample(chan, series, Time.now - started)
      status&.tick(now, final: true)
      [Time.now - started, series, now || top, false]
    end

    # One sample of the series, T seconds in: the top sites by live bytes
    # (a dump of SERIES_TOP sites, also what the status shows), or nil
    # when the target did not answer (no sample then).
    def self.sample(chan, series, t)
      top = chan.fetch_dump("top", top: SERIES_TOP)
      add(series, t, top)
      top
    rescue Failure
      nil
    end

    # Adds DUMP's SERIES_TOP sites with most live bytes to SERIES, T
    # seconds in.
    def self.add(series, t, dump)
      # by location: with --stacks several sites (stacks) share one line
      by_line = Hash.new(0)
      listed = dump.sites.max_by(SERIES_TOP) { |s| s[:live].to_i }
      listed.each { |s| by_line[s[:location]] += s[:live].to_i }
      # what a site it left out held: nothing when it listed fewer than
      # asked (every site with an allocation), else at most the least
      # listed one
      unlisted = listed.size < SERIES_TOP ? 0 : listed.map { |s| s[:live].to_i }.min
      series.add(t, dump.header["tracked_live_bytes"].to_i, by_line, unlisted)
    end

    # With --gc, the final DUMP's figures (taken after the GC, WINDOW
    # seconds in) as the series' last sample, marked as such: its fall is
    # the GC's, not the process's (MwrapGrowth.trend).
    def self.after_gc(series, dump, window)
      return if dump.header["gc"] != "ran" || series.empty?

      by_line = Hash.new(0)
      dump.sites.each { |s| by_line[s[:location]] += s[:live].to_i if series.sites.key?(s[:location]) }
      series.add_after_gc(window + dump.header["gc_ms"].to_f / 1000, dump.header["tracked_live_bytes"].to_i, by_line)
    end
  end

  # Status while the window runs: refreshed each second on a terminal
  # (--watch: the top 10 sites, redrawn like top), a plain line (or
  # table) every 5 seconds otherwise, and one at the end.
  class StatusPrinter
    def initialize(chan, o, started)
      @chan = chan
      @o = o
      @started = started
      @tty = $stderr.tty?
      @every = @tty ? 1.0 : 5.0
      @last = nil
    end

    # Shows TOP (the latest sample: a dump of the top sites) when due.
    def tick(top, final: false)
      return unless top
      return unless final || @last.nil? || Time.now - @last >= @every

      @last = Time.now
      line = status_line(top)
      return unless line

      if @o[:watch]
        table = watch_table(top, Time.now - @started)
        $stderr.print(@tty ? "\e[H\e[2J#{line}\n#{table}" : "#{line}\n#{table}")
      elsif @tty
        $stderr.print "\r#{line[0, terminal_width - 1].ljust(terminal_width - 1)}"
        $stderr.print "\n" if final
      else
        warn line
      end
    rescue Failure
      nil
    end

    # Ends a terminal's status line (redrawn in place) before others.
    def close
      $stderr.print "\n" if @tty && @last && !@o[:watch]
    end

    private

    # One line: elapsed/remaining, live bytes, allocations per second and
    # the site holding most live bytes (what grew most: the window started
    # empty).  nil when the target does not answer.
    def status_line(top)
      s = @chan.stats
      elapsed = Time.now - @started
      seconds = @o[:seconds]
      window = seconds.finite? ? format("%.0fs/%.0fs", elapsed, seconds) : format("%.0fs", elapsed)
      first = top.sites.first
      lead = first ? "  top: #{MwrapReport.human(first[:live])} #{first[:location]}" : ""
      format("[mwrap-attach] %s  live %s  %s allocs/s  %s sites%s",
             window, MwrapReport.human(s["live_bytes"].to_i), s["allocations_per_s"], s["sites"], lead)
    rescue Failure
      nil
    end

    # The top 10 sites of a sample, ELAPSED seconds into the window, one
    # line each within the terminal's width (a long location keeps its
    # tail: the file and line).
    def watch_table(top, elapsed)
      sites = top.sites.first(10)
      total = top.sites.sum { |s| s[:live].to_i }
      room = [terminal_width - 1 - WATCH_COLUMNS, 20].max
      out = +format("top %d sites by live bytes, %.1f s into the window (Ctrl-C ends):\n", sites.size, elapsed)
      out << format("%10s %6s %11s  %s\n", "live", "share", "allocations", "location")
      sites.each do |s|
        loc = s[:location]
        loc = "...#{loc[-(room - 3)..]}" if loc.size > room
        share = total.positive? ? 100.0 * s[:live].to_i / total : 0.0
        out << format("%10s %5.1f%% %11d  %s\n", MwrapReport.human(s[:live]), share, s[:allocations], loc)
      end
      out
    end

    # the columns before a watch row's location
    WATCH_COLUMNS = 32

    def terminal_width
      ($stderr.winsize[1] rescue 100).clamp(40, 400)
    end
  end
end
