# frozen_string_literal: true

require_relative "failure"
require_relative "control"
require_relative "seccomp"

module MwrapAttach
  # A process we attach to; ROOT is its filesystem as we reach it.
  Target = Struct.new(:pid, :nspid, :uid, :gid, :root, keyword_init: true) do
    def path(in_target)
      "#{root}#{in_target}"
    end

    def alive?
      Process.kill(0, pid)
      state = File.read("/proc/#{pid}/stat")[/\) (\S)/, 1]
      state != "Z"
    rescue Errno::ESRCH, Errno::ENOENT
      false
    rescue Errno::EPERM
      true
    end

    def attached?
      File.read("/proc/#{pid}/maps").include?("libmwrap") && !ControlClient.find(self).nil?
    rescue Errno::EACCES, Errno::ENOENT, Errno::ESRCH
      false
    end
  end

  # Checks before touching the process; each failure has its own exit
  # code, one line of cause and one of fix.
  module Preflight
    extend Fails

    # The Target PID, once it passed every check (o: the options; the
    # seccomp check may turn a feature off in it).
    def self.check(pid, backend, o = {})
      fail!(EXIT[:usage], "refusing to attach to myself") if pid == Process.pid
      begin
        st = status_fields(pid)
      rescue Errno::ENOENT, Errno::ESRCH
        fail!(EXIT[:no_such_process], "no such process: #{pid}",
              "check the pid (ps -ef | grep ruby)")
      end
      state = st["State"].to_s
      fail!(EXIT[:no_such_process], "process #{pid} is a zombie") if state.start_with?("Z")
      if state.start_with?("T", "t")
        fail!(EXIT[:stopped], "process #{pid} is stopped (state #{state})",
              "resume it first (kill -CONT #{pid}); mwrap-attach leaves stopped processes alone")
      end
      if File.read("/proc/#{pid}/cmdline").empty? && !File.exist?("/proc/#{pid}/exe")
        fail!(EXIT[:usage], "process #{pid} is a kernel thread")
      end
      tracer = st["TracerPid"].to_i
      if tracer != 0
        name = File.read("/proc/#{tracer}/comm").strip rescue "?"
        fail!(EXIT[:already_traced], "process #{pid} is already traced by #{name} (TracerPid #{tracer})",
              "detach that debugger (#{name}) first")
      end
      uid = st["Uid"].split.first.to_i
      gid = st["Gid"].split.first.to_i
      check_permission(pid, uid)
      Seccomp.check(pid, st, o)
      gdb_installed! if backend == "gdb"
      nspid = st["NSpid"].to_s.split.last || pid.to_s
      Target.new(pid: pid, nspid: nspid.to_i, uid: uid, gid: gid,
                 root: "/proc/#{pid}/root")
    end

    # Fails unless gdb is on PATH (the gdb backend's first need).
    def self.gdb_installed!
      return if system("command -v gdb >/dev/null 2>&1")

      fail!(EXIT[:no_gdb], "gdb is not installed (needed by --backend=gdb)",
            "install it (apt-get install gdb) or use --backend=ptrace")
    end

    def self.status_fields(pid)
      File.read("/proc/#{pid}/status").lines.to_h do |l|
        k, v = l.split(":", 2)
        [k, v.to_s.strip]
      end
    end

    def self.capability?(bit)
      caps = File.read("/proc/self/status")[/^CapEff:\s*(\h+)/, 1].to_i(16)
      caps[bit] == 1
    end

    # uid, CAP_SYS_PTRACE and Yama's ptrace_scope.
    def self.check_permission(pid, uid)
      cap_ptrace = capability?(19)
      in_container = File.exist?("/.dockerenv") ||
                     File.read("/proc/1/cgroup").match?(/docker|kubepods|containerd/) rescue false
      if uid != Process.euid && !cap_ptrace
        fail!(EXIT[:permission], "process #{pid} belongs to uid #{uid}, and this user lacks CAP_SYS_PTRACE",
              "run as root or as uid #{uid}" + (in_container ? "; in Docker, start the container with --cap-add=SYS_PTRACE" : ""))
      end
      scope = File.read("/proc/sys/kernel/yama/ptrace_scope").to_i rescue 0
      return if cap_ptrace
      if scope >= 2
        fail!(EXIT[:permission], "kernel.yama.ptrace_scope is #{scope}: only CAP_SYS_PTRACE may attach",
              "run as root" + (in_container ? " (in Docker: --cap-add=SYS_PTRACE)" : ""))
      elsif scope == 1
        fail!(EXIT[:permission], "kernel.yama.ptrace_scope is 1: a non-root user may only trace its own children",
              "run as root, or sysctl kernel.yama.ptrace_scope=0")
      end
    end
  end
end
