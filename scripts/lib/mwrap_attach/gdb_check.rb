# SPDX-License-Identifier: MIT
# frozen_string_literal: true

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

    # Debian 12's gdb 13.1 on a CPU with AMX cannot write the extended
    # register state back after an inferior call: a thread it interrupted in
    # a system call then gets errno 512 and the process dies.  So the gdb at
    # hand first calls into a child of our own blocked in read() (cat on a
    # pipe), which must then echo a line and exit 0; only then does it touch
    # the target.  nil when it passed, else what went wrong.
    def self.fault(injector, timeout)
      r_in, w_in = IO.pipe
      r_out, w_out = IO.pipe
      pid = Process.spawn("cat", in: r_in, out: w_out, err: File::NULL)
      r_in.close
      w_out.close
      return "cat did not block in read()" unless blocked_in_read?(pid)

      libc = Maps.paths(pid).find { |f| f.include?("/libc.so") }
      return "no libc in cat" unless libc

      out = IO.popen([injector, "-p", pid.to_s, "--backend=gdb", "--timeout", timeout.to_s,
                      libc, "strlen", "mwrap"], err: %i[child out], &:read)
      return "gdb could not call into it: #{out.lines.last.to_s.strip}" unless out =~ /^result=5$/

      begin
        w_in.write("ping\n")
      rescue Errno::EPIPE
        nil # it died already: its status below says how
      end
      w_in.close
      echoed = IO.select([r_out], nil, nil, 5) && r_out.read_nonblock(64, exception: false)
      _, status = Process.wait2(pid)
      pid = nil
      return nil if echoed == "ping\n" && status.success?

      "a process it called into, blocked in read(), " +
        (status.signaled? ? "died of signal #{status.termsig}" : "exited #{status.exitstatus}") +
        " instead of reading on (#{echoed.inspect})"
    ensure
      [w_in, r_out].each { |io| io&.close unless io&.closed? }
      if pid
        Process.kill(:KILL, pid) rescue nil
        Process.wait(pid) rescue nil
      end
    end

    def self.blocked_in_read?(pid)
      deadline = Time.now + 2
      until Time.now > deadline
        return true if File.read("/proc/#{pid}/syscall").split.first == "0"
        sleep 0.01
      end
      false
    rescue SystemCallError
      false
    end

    private_class_method :fault, :blocked_in_read?
  end
end
