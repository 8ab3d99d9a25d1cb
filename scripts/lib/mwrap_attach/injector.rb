# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "paths"

module MwrapAttach
  # mwrap-inject: loads our library into the target and calls mw_attach;
  # its exit codes and mw_attach's results mapped to ours.
  module Injector
    extend Fails

    # Ours, built for the C library this Ruby runs on, once it has run
    # here (its exit codes read): one built for the other C library
    # cannot (exec finds no ELF interpreter), which it fails for.
    def self.path
      @path ||= begin
        found = MwrapAttach.our_file(:bin, "mwrap-inject", test: :executable?)
        fix = OWN_LIBC == :glibc ? "run 'make'" : "run 'make build-#{OWN_LIBC}' in the source tree"
        fail!(EXIT[:inject], "cannot find mwrap-inject", fix) unless found
        begin
          @exit_codes = read_exit_codes(found)
        rescue SystemCallError => e
          fail!(EXIT[:inject], "cannot run #{found} (#{e.class.name.split('::').last}): it is " \
                               "not built for this machine's C library (#{OWN_LIBC})", fix)
        end
        found
      end
    end

    # mwrap-inject's exit codes by name (GONE, PERM, LOAD, ...), from
    # `mwrap-inject --exit-codes`: inject/base/exitcodes.h is their one source.
    def self.exit_codes
      path # reads them, the first time
      @exit_codes
    end

    def self.read_exit_codes(injector)
      IO.popen([injector, "--exit-codes"], &:read).lines.to_h do |l|
        name, number = l.split
        [name, number.to_i]
      end
    end

    # The name of mwrap-inject's exit code N (nil when it has none: it
    # died of a signal, or is not the one we asked).
    def self.exit_name(number)
      number && exit_codes.key(number)
    end

    # Loads LIB and calls mw_attach(OPTS) in TARGET through mwrap-inject,
    # with its native ptrace backend or gdb, and checks mw_attach's
    # result.  Raises a Failure for either's failure.
    def self.attach(target, lib, opts, backend, verbose, timeout)
      result = call(target, lib, "mw_attach", opts, backend, verbose, timeout)
      case result
      when 0 then nil
      when -Errno::EALREADY::Errno
        fail!(EXIT[:already_attached], "process #{target.pid} is already attached")
      when -Errno::EBUSY::Errno
        fail!(EXIT[:already_attached], "process #{target.pid} already runs under LD_PRELOAD=libmwrap.so",
              "use its MWRAP= dump options or the Ruby API instead")
      else
        fail!(EXIT[:inject], "mw_attach failed in the target: " \
                             "#{SystemCallError.new(nil, -result).message rescue result}")
      end
    end

    # Calls FUNCTION(ARG) in LIB, loaded into TARGET; returns its result.
    def self.call(target, lib, function, arg, backend, verbose, timeout)
      cmd = [path, "-p", target.pid.to_s, "--backend=#{backend}", "--timeout", timeout.to_s]
      cmd << "-v" if verbose
      cmd += [lib, function, arg]
      # its own process group: a terminal's Ctrl-C must not cut it short
      # mid-call (it ends within its timeout; we act on the Ctrl-C after)
      out = IO.popen(cmd, err: %i[child out], pgroup: true, &:read)
      status = $?
      warn out if verbose
      result = out[/^result=(-?\d+)/, 1]
      return result.to_i if status.success? && result

      reason = out.lines.grep(/mwrap-inject:/).last.to_s.strip
      case exit_name(status.exitstatus)
      when "NOPROC", "GONE"
        fail!(EXIT[:target_gone], "process #{target.pid} exited during the attach")
      when "PERM"
        fail!(EXIT[:permission], "ptrace was refused: #{reason}",
              "run as root; in Docker add --cap-add=SYS_PTRACE")
      when "LOAD", "SYMBOL"
        fail!(EXIT[:library], "the target could not load the library: #{reason}",
              "check that #{lib} and liburcu are readable by uid #{target.uid}")
      when "LIBC"
        # the injector's line names both C libraries and the build to
        # use; Stage loads the target's own where there is one
        fail!(EXIT[:library], reason.sub(/\Amwrap-inject: /, ""),
              "this tree or install has no build for that C library: run 'make build-musl' " \
              "in the source tree, and mwrap-attach loads it into musl targets")
      else
        fail!(EXIT[:inject], "injection failed: #{reason}", "retry with -v for the transcript")
      end
    end
    private_class_method :call, :read_exit_codes
  end
end
