# frozen_string_literal: true

require_relative "failure"
require_relative "control"
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
      if target.attached? && (ControlClient.find(target)&.command("stats") rescue nil)
        fail!(EXIT[:already_attached], "process #{target.pid} is already attached",
              "use --dump, --stats or --detach (or kill -URG #{target.pid})")
      end
      GdbCheck.check(o[:timeout]) if o[:backend] == "gdb"
      lib, copy = Stage.library_for(target, o[:verbose])
      opts = []
      opts << "sample:#{o[:sample].to_i}" if o[:sample]
      opts << "stacks:#{o[:stacks].to_i}" if o[:stacks]
      opts << "lease:#{ControlClient::LEASE_SECONDS}" unless o[:keep]
      opts << "staged:1" if copy
      interrupt, old_traps = Window.trap_interrupts unless o[:keep]
      t0 = Time.now
      begin
        Injector.attach(target, lib, opts.join(","), o[:backend], o[:verbose], o[:timeout])
      ensure
        # handed to the target's user if loaded (removed when the target
        # exits), else removed now
        copy&.settle(target, o[:verbose])
      end
      chan, attached = ControlClient.wait_attached(target)
      warn format("mwrap-attach: attached to %d in %.0f ms (%s)", target.pid, (Time.now - t0) * 1000, attached)
      if o[:keep]
        warn "mwrap-attach: staying attached; dump with: kill -URG #{target.pid} (to #{chan.path}/dump " \
             "in the target's filesystem), or mwrap-attach -p #{target.pid} --dump; stop with --detach"
        return EXIT[:ok]
      end
      dump = window = series = nil
      chan.leased do
        window, series = Window.run(target, chan, o, interrupt)
        dump = chan.final_dump(o, "final")
      end
      dump.series = series
      ans = chan.command("detach --discard")
      warn "mwrap-attach: detached (#{ans})"
      Output.emit(Output.render(dump, window, o[:format]), o[:output])
      EXIT[:ok]
    ensure
      old_traps&.each { |sig, handler| trap(sig, handler) }
    end
  end
end
