# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "control"
require_relative "exited"
require_relative "gdb_check"
require_relative "injector"
require_relative "output"
require_relative "stage"
require_relative "window"

module MwrapAttach
  # One attach, from the injection to the report and the detach (or,
  # with --keep, to the helper's first answer).
  module Attach
    extend Fails

    # Attaches to TARGET (checked by Preflight) as the options O say;
    # returns our exit code.
    def self.run(target, o)
      lib, copy, opts = prepare(target, o)
      # from here a Ctrl-C waits for the injection's end, then detaches
      interrupt, old_traps = Window.trap_interrupts
      chan = inject(target, o, lib, copy, opts, interrupt)
      if o[:keep]
        warn "mwrap-attach: staying attached; dump with: kill -URG #{target.pid} (to #{chan.path}/dump " \
             "in the target's filesystem), or mwrap-attach -p #{target.pid} --dump; stop with --detach"
        return EXIT[:ok]
      end
      dump, window, exited = collect(target, chan, o, interrupt)
      Output.emit(Output.render(dump, window, o[:format]), o[:output])
      exited ? EXIT[:exited] : EXIT[:ok]
    ensure
      old_traps&.each { |sig, handler| trap(sig, handler) }
    end

    # Before the injection, the process untouched: refuses one already
    # attached, checks gdb, makes the library loadable.  Returns [the
    # library's path as the target sees it, the staged Copy or nil, the
    # attach options for the helper].
    def self.prepare(target, o)
      stats = target.attached? && (ControlClient.find(target)&.stats rescue nil)
      stats = ControlClient.wait_orphaned(target, stats) if stats
      fail!(EXIT[:already_attached], *ControlClient.refusal(target, stats)) if stats
      GdbCheck.check(o[:timeout]) if o[:backend] == "gdb"
      lib, copy = Stage.library_for(target, o[:verbose])
      opts = []
      opts << "sample:#{o[:sample].to_i}" if o[:sample]
      opts << "stacks:#{o[:stacks].to_i}" if o[:stacks]
      # exact lines, and about one stack per 64 KiB for their callers
      opts << "stack_sample:#{CLI::DEFAULT_STACKS_SAMPLE}" if o[:stacks] && !o[:sample]
      opts << "lease:#{ControlClient::LEASE_SECONDS}" unless o[:keep]
      opts << "staged:1" if copy
      [lib, copy, opts.join(",")]
    end

    # Injects LIB (prepare's) into TARGET and waits for its helper's
    # answer: the control channel.  INTERRUPT (Window.trap_interrupts)
    # seen meanwhile: detached at once, and fails (interrupted).
    def self.inject(target, o, lib, copy, opts, interrupt)
      t0 = Time.now
      begin
        Injector.attach(target, lib, opts, o[:backend], o[:verbose], o[:timeout])
      ensure
        # handed to the target's user if loaded (removed when the target
        # exits), else removed now
        copy&.settle(target, o[:verbose])
      end
      chan, attached = ControlClient.wait_attached(target)
      warn format("mwrap-attach: attached to %d in %.0f ms (%s)", target.pid, (Time.now - t0) * 1000, attached)
      interrupted_attach(target, chan) if interrupt&.dig(:seen)
      chan
    end

    # The window on CHAN, to its end (o[:seconds], INTERRUPT or the
    # target's exit), then the detach: [its dump, its length in seconds,
    # whether the target exited].
    def self.collect(target, chan, o, interrupt)
      # read now: a process that exits during the window takes them along
      scope = { "library_dirs" => target.library_dirs, "app_dirs" => target.app_dirs }
      dump = window = series = last = exited = nil
      chan.leased do
        window, series, last, exited = Window.run(target, chan, o, interrupt)
        dump = chan.final_dump(o, "final") unless exited
      rescue Failure
        raise if target.alive?

        exited = true
      end
      dump = Exited.dump(target, chan, o, window, series, last) if exited
      dump.header.merge!(scope)
      Window.after_gc(series, dump, window) unless exited
      dump.series = series
      detach(target, chan) unless exited
      [dump, window, exited]
    end

    # A Ctrl-C (or SIGTERM) came while the injection ran, which went on to
    # its end: the window is not begun, the target detached at once.
    def self.interrupted_attach(target, chan)
      warn "mwrap-attach: interrupted during the attach: detaching at once"
      detach(target, chan)
      fail!(EXIT[:interrupted], "interrupted: process #{target.pid} was attached and is detached again, untouched")
    end

    # Ends the window on CHAN; a target that exits just then leaves its
    # runtime directory (with its exit dump) to us.
    def self.detach(target, chan)
      warn "mwrap-attach: detached (#{chan.command('detach --discard')})"
    rescue Failure
      raise if target.alive?

      chan.remove_dir
      warn "mwrap-attach: process #{target.pid} exited as the window ended"
    end
  end
end
