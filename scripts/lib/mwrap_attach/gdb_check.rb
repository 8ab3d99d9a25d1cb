# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require "rbconfig"
require_relative "failure"
require_relative "injector"
require_relative "maps"

module MwrapAttach
  # The gdb backend, proven on a process of our own first.
  module GdbCheck
    extend Fails

    # Fails unless the gdb at hand passes the probe below.
    def self.check(timeout)
      problem = fault(Injector.path, timeout)
      return unless problem

      fail!(EXIT[:no_gdb], "this gdb cannot restore the processes it calls into here: #{problem}",
            "use the native backend (--backend=ptrace), or gdb 14 or later " \
            "(Debian 12's gdb 13.1 loses a thread's extended state on CPUs with AMX)")
    end

    # The two probes: a thread blocked in a system call, and one running
    # with every vector register live.  nil when both passed.
    def self.fault(injector, timeout)
      blocked_fault(injector, timeout) || vector_fault(injector, timeout)
    end

    # gdb calls into a thread of mwrap-inject --vector-victim while it
    # runs with known values in its vector registers (with AVX-512 as an
    # EVEX memcpy holds them: zmm16-31, ymm0-15, k1-k7): they must be
    # intact after.  Debian 12's gdb 13.1 writes the AVX-512 state back at
    # Intel's offsets after its own inferior calls, which the gdb backend
    # no longer makes on x86-64 (inject/backends/gdb/attach.py); the probe checks
    # that the calls as an attach makes them keep every register.  nil
    # when it passed.
    def self.vector_fault(injector, timeout)
      with_victim([injector, "--vector-victim"]) do |pid, w_in, r_out, reap|
        ready = IO.select([r_out], nil, nil, 10) && r_out.gets
        next "the vector probe did not start" unless ready&.start_with?("ready ")

        failed = gdb_call(injector, pid, timeout)
        sleep 1 # a block or two more, so that the damage, if any, is seen
        w_in.close
        said = (IO.select([r_out], nil, nil, 10) && r_out.read).to_s
        ok = reap.call.success? && said.start_with?("ok")
        # a victim that saw the damage exits at once: the injector may
        # have found it gone before its answer was read
        if said.start_with?("CORRUPT") || (!ok && !failed)
          next "a thread it called into while it ran lost its #{ready.split[1]} registers (#{said.strip.inspect})"
        end
        next "#{failed} (a running thread)" if failed

        nil
      end
    end

    # Debian 12's gdb 13.1 on a CPU with AMX cannot write the extended
    # register state back after an inferior call: a thread it interrupted in
    # a system call then gets errno 512 and the process dies.  So the gdb at
    # hand first calls into a child of our own blocked in read() on a pipe
    # (mwrap-inject --read-victim: a cat may map no C library to call
    # into, as a static busybox), which must then echo a line and exit 0;
    # only then does it touch the target.  nil when it passed, else what
    # went wrong.
    def self.blocked_fault(injector, timeout)
      with_victim([injector, "--read-victim"]) do |pid, w_in, r_out, reap|
        next "the read probe did not block in read()" unless blocked_in_read?(pid)

        failed = gdb_call(injector, pid, timeout)
        next failed if failed

        begin
          w_in.write("ping\n")
        rescue Errno::EPIPE
          nil # it died already: its status below says how
        end
        w_in.close
        echoed = IO.select([r_out], nil, nil, 5) && r_out.read_nonblock(64, exception: false)
        status = reap.call
        next nil if echoed == "ping\n" && status.success?

        "a process it called into, blocked in read(), " +
          (status.signaled? ? "died of signal #{status.termsig}" : "exited #{status.exitstatus}") +
          " instead of reading on (#{echoed.inspect})"
      end
    end

    # Runs ARGV, a probe's victim, between two pipes and yields [its pid,
    # the writer of its stdin, the reader of its stdout, a lambda that
    # reaps it and returns its status]; the block's value is returned.
    # Killed and reaped after, unless the block reaped it.
    def self.with_victim(argv)
      r_in, w_in = IO.pipe
      r_out, w_out = IO.pipe
      pid = Process.spawn(*argv, in: r_in, out: w_out, err: File::NULL)
      r_in.close
      w_out.close
      reap = lambda do
        _, status = Process.wait2(pid)
        pid = nil
        status
      end
      yield pid, w_in, r_out, reap
    ensure
      [w_in, r_out].each { |io| io&.close unless io&.closed? }
      if pid
        Process.kill(:KILL, pid) rescue nil
        Process.wait(pid) rescue nil
      end
    end

    # gdb's call of strlen("mwrap") into process PID, as an attach makes
    # its calls: nil when it answered 5, else what went wrong.
    def self.gdb_call(injector, pid, timeout)
      libc, = Maps.libc(pid)
      return "no libc in the probe's process" unless libc

      out = IO.popen([injector, "-p", pid.to_s, "--backend=gdb", "--timeout", timeout.to_s,
                      libc, "strlen", "mwrap"], err: %i[child out], &:read)
      out =~ /^result=5$/ ? nil : "gdb could not call into it: #{out.lines.last.to_s.strip}"
    end

    # read(2)'s number as /proc/PID/syscall shows it: x86-64's own table,
    # or the generic one (aarch64)
    READ_SYSCALL = { "x86_64" => "0", "aarch64" => "63" }.freeze

    def self.blocked_in_read?(pid)
      read = READ_SYSCALL.fetch(RbConfig::CONFIG["host_cpu"], "0")
      # a fresh victim reaches its read() in milliseconds; much more under
      # an emulated CPU (qemu's TCG: 20-40 times slower)
      deadline = Time.now + 10
      until Time.now > deadline
        return true if File.read("/proc/#{pid}/syscall").split.first == read
        sleep 0.01
      end
      false
    rescue SystemCallError
      false
    end

    private_class_method :fault, :blocked_fault, :vector_fault, :with_victim, :gdb_call, :blocked_in_read?
  end
end
