# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "injector"

module MwrapAttach
  # The target's seccomp filter, judged before anything runs in it.
  module Seccomp
    extend Fails

    # Syscalls made only for a feature, and the option that asks for it.
    FEATURES = { scan: "--scan", objects: "--objects" }.freeze

    # Decides from what the target's seccomp filter does with each syscall
    # an attach makes (mwrap-inject --check-seccomp lists them and reads or
    # probes the filter), not from its presence: refuses a filter that would
    # kill the target on one of them, or denies one the attach needs, or
    # that cannot be shown safe; a feature whose syscall is denied is
    # dropped with a warning.  Nothing runs in the target.  From a debug
    # sidecar the filter can be neither read nor shown to be ours: the
    # user vouches that it is (o[:same_seccomp]), and ours is probed.
    def self.check(pid, st, o)
      return if st["Seccomp"].to_i.zero? || %i[stats detach].include?(o[:action])

      out = IO.popen([Injector.path, "--check-seccomp", "-p", pid.to_s, *(o[:verbose] ? ["-v"] : []),
                      *(o[:same_seccomp] ? ["--same-seccomp"] : [])],
                     err: %i[child out], &:read)
      warn out if o[:verbose]
      calls = out.lines.filter_map do |l|
        m = l.match(/\Asyscall (\S+) -?\d+ (\S+) (\S+)(?: varies)? \((.*)\): (.*)$/)
        m && { name: m[1], action: m[2], need: m[3], user: m[4], effect: m[5] }
      end
      verdict = out[/^verdict (\S+)/, 1]
      unless verdict
        fail!(EXIT[:seccomp], "cannot judge the seccomp filter of process #{pid}: " \
                              "#{out.lines.last.to_s.strip.sub(/\Amwrap-inject: /, '')}",
              "run mwrap-attach as root on the host")
      end
      wanted = FEATURES.select { |k, _| o[k] }.values
      calls.each do |c|
        fatal = %w[kill trap].include?(c[:action])
        if c[:need] == "feature"
          next unless wanted.include?(c[:user]) && o[FEATURES.key(c[:user])]

          if fatal
            fail!(EXIT[:seccomp], "process #{pid}'s seccomp filter would kill it on #{c[:name]} " \
                                  "(SECCOMP_RET_#{c[:action].upcase}), which #{c[:user]} makes",
                  "nothing was done to it; run without #{c[:user]}")
          end
          next if c[:action] == "allow"

          warn "mwrap-attach: #{c[:user]} unavailable: process #{pid}'s seccomp filter " \
               "#{c[:action] == 'notify' ? 'hands' : 'answers'} #{c[:name]} " \
               "#{c[:action] == 'notify' ? 'to a supervisor' : "with #{c[:action].sub('errno=', '')}"}"
          o[FEATURES.key(c[:user])] = false
        elsif o[:action] == :attach && c[:action] != "allow" && o[:verbose]
          warn "mwrap-attach: seccomp: #{c[:name]} #{c[:action]} (#{c[:user]}): #{c[:effect]}"
        end
      end
      if verdict == "refuse" && o[:action] == :attach
        c = calls.find { |x| x[:name] == out[/^verdict refuse \S+: (\S+)/, 1] } || calls.first
        if %w[kill trap].include?(c[:action]) && c[:name] == "skipped-syscall"
          fail!(EXIT[:seccomp], "process #{pid}'s seccomp filter would kill it on syscall -1, " \
                                "which a tracer makes to skip a syscall (the injector, between calls)",
                "nothing was done to it; give the filter a default errno action " \
                "(systemd: SystemCallErrorNumber=EPERM), or trace it from the start with `mwrap`")
        end
        if %w[kill trap].include?(c[:action])
          fail!(EXIT[:seccomp], "process #{pid}'s seccomp filter would kill it on #{c[:name]} " \
                                "(SECCOMP_RET_#{c[:action].upcase}#{c[:action] == 'trap' ? ': SIGSYS' : ''}), " \
                                "a syscall the attach makes (#{c[:user]})",
                "nothing was done to it; allow #{c[:name]} in its filter (or answer it with an errno, " \
                "as Docker's and podman's default profiles do), or trace it from the start with `mwrap`")
        end
        fail!(EXIT[:seccomp], "process #{pid}'s seccomp filter denies #{c[:name]} " \
                              "(#{c[:action].sub('errno=', '')}), which the attach needs (#{c[:user]}: #{c[:effect]})",
              "nothing was done to it; allow #{c[:name]} in its seccomp profile")
      end
      return unless verdict == "unknown" && (o[:action] == :attach || wanted.any?)

      why = out[/^verdict unknown \S+: (.*)$/, 1]
      fail!(EXIT[:seccomp], "process #{pid} runs under a seccomp filter that cannot be shown safe: #{why}",
            unknown_fix(why, o))
    end

    # What to do about a filter that could not be judged.  From a sidecar
    # (sharing the target's pid namespace, not its files): vouch for a
    # chain as long as ours (--same-seccomp), or read the filter from a
    # container without one and with CAP_SYS_ADMIN.
    def self.unknown_fix(why, o)
      readable = "kubectl debug --profile=sysadmin, podman run --privileged: there the filter can be read"
      unless why.to_s.end_with?("a sidecar)")
        return "run mwrap-attach as root on the host, where the filter can be read, or inside the " \
               "target's container (docker exec), where it runs under the same filter"
      end
      ours, its = why.match(/we have (\d+) filters, it has (\d+)/)&.captures&.map(&:to_i)
      if ours != its || ours.to_i.zero?
        return "this container's seccomp chain is not the target's (#{ours} filters, #{its} there): give it " \
               "the target's profile#{o[:same_seccomp] ? '' : ' and add --same-seccomp'}, or run it " \
               "without a filter and with CAP_SYS_ADMIN (#{readable})"
      end
      "if this container runs under the same seccomp profile as the target's (both the runtime's " \
        "default: kubectl debug --target, podman run --pid=container:APP), add --same-seccomp; " \
        "else run it without a filter and with CAP_SYS_ADMIN (#{readable})"
    end
  end
end
