# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "attach"
require_relative "output"
require_relative "pprof_labels"
require_relative "push"
require_relative "serve"
require_relative "window"
require_relative "../mwrap_report"

module MwrapAttach
  # --every SECONDS: a window of -d seconds every SECONDS, the target
  # detached between them (its GOT restored, no helper thread, no runtime
  # directory), each window's profile served (--serve, serve.rb) and
  # pushed (--push, push.rb), with --label's labels on every sample.
  # SIGTERM or SIGINT ends the run at once: a window under way is cut
  # short and detached, the server closed, exit 0.  The target exiting
  # ends it with exited (16), its last window's profile pushed.
  module Every
    extend Fails

    # windows after the first that may fail in a row (each said on
    # stderr) before the run ends with the last one's code; the first
    # window's failure is the run's at once
    FAILURES = 3
    # how long a push under way may take to finish as the run ends
    PUSH_WAIT = 10.0
    # options that make no sense for a window's pprof profile, or for a
    # run that goes on: [key, option]
    REFUSED = [[:keep, "--keep"], [:watch, "--watch"], [:output, "-o"], [:objects, "--objects"],
               [:dump_all, "--dump-all"], [:scan, "--scan"], [:group, "--group"]].freeze
    LABEL_KEY = /\A[A-Za-z_][A-Za-z0-9_]*\z/.freeze
    # what Pyroscope's ingest name can carry: no braces, commas, equals
    # signs, quotes or spaces
    NAME_TEXT = /\A[^{},="\s\\]+\z/.freeze

    # Checks --every and what goes with it in O (CLI.parse_args' options,
    # -d already a number); fails (usage).  Turns o[:every] into seconds
    # and o[:labels] into [[key, value], ...].
    def self.check(o)
      given = { serve: "--serve", push: "--push", labels: "--label", app: "--app" }.select { |k, _| o[k] }
      unless o[:every]
        fail!(EXIT[:usage], "#{given.values.join(', ')}: only with --every SECONDS",
              "e.g. mwrap-attach -p PID --every 60 -d 10 --serve 127.0.0.1:6060") unless given.empty?
        return
      end
      every = Float(o[:every], exception: false)
      fail!(EXIT[:usage], "--every wants a number of seconds > 0, got #{o[:every].inspect}") unless every&.positive? && every.finite?
      fail!(EXIT[:usage], "--every needs -d SECONDS, each window's length", "e.g. --every 60 -d 10") unless o[:seconds_given]
      if o[:seconds] >= every
        fail!(EXIT[:usage], format("-d %g is not shorter than --every %g: the target is to be detached between windows",
                                   o[:seconds], every),
              "e.g. --every 60 -d 10")
      end
      if o[:pids]&.size.to_i > 1 || o[:children_of]
        fail!(EXIT[:usage], "--every takes one pid",
              "run one mwrap-attach --every per process, each with its own --serve port or --label pod=...")
      end
      fail!(EXIT[:usage], "--every runs windows: not with --dump, --stats or --detach") if o[:action] != :attach
      fail!(EXIT[:usage], "--every needs --serve ADDR:PORT or --push URL: where each window's profile goes") unless o[:serve] || o[:push]
      REFUSED.each { |k, name| fail!(EXIT[:usage], "--every does not take #{name}") if o[k] }
      fail!(EXIT[:usage], "--every writes pprof profiles: not with --format") if o[:format] != "text"
      fail!(EXIT[:usage], "--app names the application for --push") if o[:app] && !o[:push]
      fail!(EXIT[:usage], "--app wants a name without braces, commas, equals signs, quotes or spaces") if o[:app] && !o[:app].match?(NAME_TEXT)
      ProfileServer.parse(o[:serve]) if o[:serve]
      Pusher.parse(o[:push]) if o[:push]
      o[:labels] = labels(o[:labels] || [])
      o[:every] = every
    end

    # --label KEY=VALUE texts as [[key, value], ...]; fails (usage).
    def self.labels(texts)
      pairs = texts.map do |text|
        key, value = text.split("=", 2)
        unless key.to_s.match?(LABEL_KEY) && !key.start_with?("__") && value.to_s.match?(NAME_TEXT)
          fail!(EXIT[:usage], "--label wants KEY=VALUE (KEY: letters, digits, _; VALUE without braces, " \
                              "commas, equals signs, quotes or spaces), got #{text.inspect}")
        end
        [key, value]
      end
      dup = pairs.map(&:first).tally.find { |_, n| n > 1 }
      fail!(EXIT[:usage], "--label #{dup[0]} given twice") if dup
      pairs
    end

    # Runs the windows on TARGET (checked by Preflight) as O says;
    # returns our exit code.
    def self.run(target, o)
      flag, old_traps = Window.trap_interrupts
      server = ProfileServer.new(o[:serve], target.pid) if o[:serve]
      warn "mwrap-attach: serving the latest window's profile at #{server.url}" if server
      pusher = Pusher.new(o[:push], ingest_name(target, o), o[:every]) if o[:push]
      windows(target, o.merge(quiet_status: true), flag, server, pusher)
    ensure
      pusher&.close(flag&.dig(:seen) ? 2.0 : PUSH_WAIT)
      server&.close
      old_traps&.each { |sig, handler| trap(sig, handler) }
    end

    # Pyroscope's name for TARGET's profiles: --app (else its comm, with
    # what the name cannot carry made "_"), then the labels in braces.
    def self.ingest_name(target, o)
      app = o[:app] || (File.read("/proc/#{target.pid}/comm").strip rescue "").gsub(/[^A-Za-z0-9_.\-]/, "_")
      app = "ruby" if app.empty?
      "#{app}{#{o[:labels].map { |k, v| "#{k}=#{v}" }.join(',')}}"
    end

    # The windows, one every o[:every] seconds from the first one's start,
    # until a signal, the target's exit or FAILURES failed windows in a
    # row: our exit code.
    def self.windows(target, o, flag, server, pusher)
      due = clock # when the window under way was to begin
      failed = 0
      (1..).each do |n|
        server.first_due ||= clock + o[:seconds] if server
        begin
          got = window(target, o, flag)
          failed = 0
        rescue Failure => e
          # a signal during the injection: detached at once
          return stopped("window #{n} cut short and detached") if e.code == EXIT[:interrupted] || flag[:seen]
          return exited(target, "before window #{n} ended") unless target.alive?
          raise if n == 1 || (failed += 1) >= FAILURES

          warn "mwrap-attach: window #{n} failed: #{e.message}#{e.fix ? " (#{e.fix})" : ''}; trying again at the next"
        end
        return stopped("window #{n} cut short and detached") if flag[:seen]

        if got
          publish(n, got, o, server, pusher)
          return exited(target, "during window #{n}: its profile is the last") if got[3]
        end
        due = next_start(due, o[:every], n)
        why = pause(target, flag, due)
        return stopped("between windows, the process detached") if why == :signal
        return exited(target, "after window #{n}") if why == :exited
      end
    end

    # One window: [its dump, the Time it began, its length, whether the
    # target exited], or nil when a signal came before the injection.
    # Fails as an attach fails (interrupted: a signal during the
    # injection, the target detached at once).
    def self.window(target, o, flag)
      lib, copy, opts = Attach.prepare(target, o)
      if flag[:seen]
        copy&.settle(target, o[:verbose])
        return nil
      end
      chan = Attach.inject(target, o, lib, copy, opts, flag)
      from = Time.now
      dump, seconds, exited = Attach.collect(target, chan, o, flag)
      [dump, from, seconds, exited]
    end

    # Window N's profile (GOT: window's) to the server and the pusher,
    # and one line on stderr.
    def self.publish(n, got, o, server, pusher)
      dump, from, seconds, = got
      profile = PprofLabels.apply(Output.render(dump, seconds, "pprof"), o[:labels],
                                  from.to_i * 1_000_000_000 + from.nsec)
      server&.publish(profile)
      pusher&.push(n, profile, from, from + seconds)
      by = MwrapReport.default_sort(dump) == "held" ? :held : :live
      top = dump.sites.max_by { |s| s[by].to_i }
      lead = top ? ", top #{top[:location]} (#{MwrapReport.human(top[by].to_i)} #{by})" : ""
      warn format("mwrap-attach: window %d: %.1f s, tracked live %s%s", n, seconds,
                  MwrapReport.human(dump.header["tracked_live_bytes"].to_i), lead)
    end

    # When the window after window N (due at DUE) begins: EVERY seconds
    # after DUE, or a multiple of EVERY if that has passed (a slow attach
    # or dump), which is said.
    def self.next_start(due, every, n)
      late = clock - (due + every)
      return due + every if late.negative?

      skipped = (late / every).floor + 1
      warn "mwrap-attach: window #{n} ended late: #{skipped} start(s) skipped"
      due + (skipped + 1) * every
    end

    # Waits, the target detached, until the CLOCK time AT: nil then,
    # :signal or :exited as soon as either comes.
    def self.pause(target, flag, at)
      loop do
        return :signal if flag[:seen]
        return :exited unless target.alive?

        left = at - clock
        return nil if left <= 0

        sleep [left, 0.1].min
      end
    end

    def self.stopped(how)
      warn "mwrap-attach: stopping on a signal: #{how}"
      EXIT[:ok]
    end

    def self.exited(target, when_)
      warn "mwrap-attach: process #{target.pid} exited #{when_}"
      EXIT[:exited]
    end

    def self.clock
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    private_class_method :labels, :ingest_name, :windows, :window, :publish, :next_start, :pause, :stopped, :exited, :clock
  end
end
