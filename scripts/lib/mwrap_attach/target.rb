# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "paths"
require_relative "control"
require_relative "maps"
require_relative "proc_stat"
require_relative "seccomp"

module MwrapAttach
  # A process we attach to; ROOT is its filesystem as we reach it.
  Target = Struct.new(:pid, :nspid, :uid, :gid, :root, keyword_init: true) do
    def path(in_target)
      "#{root}#{in_target}"
    end

    def alive?
      Process.kill(0, pid)
      ProcStat.fields(pid)&.first != "Z"
    rescue Errno::ESRCH, Errno::ENOENT
      false
    rescue Errno::EPERM
      true
    end

    # Where the target keeps gems, from its environment (GEM_HOME,
    # GEM_PATH, BUNDLE_PATH; absolute paths as it sees them): frames there
    # are library code beside the paths every Ruby uses
    # (MwrapReport::LIBRARY).
    def library_dirs
      env = File.binread("/proc/#{pid}/environ").split("\0").to_h { |kv| kv.split("=", 2) }
      dirs = %w[GEM_HOME GEM_PATH BUNDLE_PATH].flat_map { |k| env[k].to_s.split(":") }
      dirs.select { |d| d.start_with?("/") }.map { |d| "#{d.chomp('/')}/" }.uniq
    rescue SystemCallError
      []
    end

    # Where the target's own code is, as it sees its files: its working
    # directory (where its Gemfile or config.ru usually is) and its
    # BUNDLE_GEMFILE's, each with a trailing "/"; frames under them are
    # the application's (MwrapReport::Scope).
    def app_dirs
      cwd = File.readlink("/proc/#{pid}/cwd")
      env = File.binread("/proc/#{pid}/environ").split("\0").to_h { |kv| kv.split("=", 2) }
      gemfile = env["BUNDLE_GEMFILE"].to_s
      dirs = [cwd]
      dirs << File.dirname(File.expand_path(gemfile, cwd)) unless gemfile.empty?
      dirs.map { |d| "#{d.chomp('/')}/" }.uniq
    rescue SystemCallError
      []
    end

    def attached?
      Maps.paths(pid).any? { |p| p.include?("libmwrap") } && !ControlClient.find(self).nil?
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
      if state.start_with?("Z")
        ppid = st["PPid"].to_i
        parent = File.read("/proc/#{ppid}/comm").strip rescue "?"
        fail!(EXIT[:no_such_process],
              "process #{pid} is a zombie: it has exited, and its parent #{ppid} (#{parent}) has not reaped it",
              "there is nothing left to attach to: attach to a live process (ps -ef)")
      end
      if state.start_with?("T", "t")
        fail!(EXIT[:stopped], "process #{pid} is stopped (state #{state})",
              "resume it first (kill -CONT #{pid}); mwrap-attach leaves stopped processes alone")
      end
      if kernel_thread?(pid)
        fail!(EXIT[:no_such_process],
              "process #{pid} is a kernel thread (#{st['Name']}): it has no user space to load a library into",
              "attach to a user-space process (ps -ef shows kernel threads in [brackets])")
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
      static_binary!(pid)
      Seccomp.check(pid, st, o)
      gdb_installed! if backend == "gdb"
      nspid = st["NSpid"].to_s.split.last || pid.to_s
      Target.new(pid: pid, nspid: nspid.to_i, uid: uid, gid: gid,
                 root: "/proc/#{pid}/root")
    end

    # Fails unless gdb is on PATH (the gdb backend's first need).
    def self.gdb_installed!
      return if system("command -v gdb >/dev/null 2>&1")

      # musl: Alpine's package manager
      install = OWN_LIBC == :musl ? "apk add gdb" : "apt-get install gdb"
      fail!(EXIT[:no_gdb], "gdb is not installed (needed by --backend=gdb)",
            "install it (#{install}) or use --backend=ptrace")
    end

    # PF_KTHREAD in the flags of /proc/PID/stat (the 9th field).
    def self.kernel_thread?(pid)
      ProcStat.fields(pid).to_a[6].to_i & 0x00200000 != 0
    end

    # Fails for a process with neither a dynamic loader nor a shared libc
    # mapped: a statically linked program, where there is no dlopen to
    # call (mwrap-inject would find no libc) and LD_PRELOAD does nothing.
    def self.static_binary!(pid)
      return if Maps.paths(pid).any? { |n| File.basename(n).match?(/\A(ld-linux|ld-musl|ld\.so|libc[.-])/) }

      exe = File.readlink("/proc/#{pid}/exe") rescue "its program"
      fail!(EXIT[:library],
            "process #{pid} is statically linked (#{exe}): it has no dynamic loader, so no library can be loaded into it",
            "neither mwrap-attach nor mwrap (LD_PRELOAD) can trace it: rebuild it dynamically linked (without -static)")
    rescue Errno::ENOENT, Errno::ESRCH, Errno::EACCES
      nil # gone or unreadable: later checks say so
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
