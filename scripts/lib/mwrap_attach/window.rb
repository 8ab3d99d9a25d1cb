# frozen_string_literal: true

require "io/console"
require_relative "failure"
require_relative "../mwrap_report"

module MwrapAttach
  # The sampling window: its status display, its end (time, Ctrl-C or
  # TERM) and the target exiting meanwhile.
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

    # Runs the window on CHAN until o[:seconds] passed or INTERRUPT was
    # seen; returns its length in seconds.
    def self.run(target, chan, o, interrupt)
      started = Time.now
      status = StatusPrinter.new(chan, o, started) unless o[:quiet_status]
      until interrupt[:seen] || Time.now - started >= o[:seconds]
        fail!(EXIT[:target_gone], "process #{target.pid} exited during the window") unless target.alive?
        status&.tick
        sleep [0.25, o[:seconds] - (Time.now - started)].min.clamp(0.01, 0.25)
      end
      status&.tick(final: true)
      Time.now - started
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

    def tick(final: false)
      return unless final || @last.nil? || Time.now - @last >= @every

      @last = Time.now
      top = @chan.fetch_dump("top", top: @o[:watch] ? 10 : 1)
      line = status_line(top)
      return unless line

      if @o[:watch]
        $stderr.print(@tty ? "\e[H\e[2J#{line}\n#{watch_table(top)}" : "#{line}\n#{watch_table(top)}")
      elsif @tty
        $stderr.print "\r#{line[0, terminal_width - 1].ljust(terminal_width - 1)}"
        $stderr.print "\n" if final
      else
        warn line
      end
    rescue Failure
      nil
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

    def watch_table(top)
      MwrapReport.text(top, top.sites, title: "top #{top.sites.size} sites by live bytes (Ctrl-C ends):")
    end

    def terminal_width
      ($stderr.winsize[1] rescue 100).clamp(40, 400)
    end
  end
end
