# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require "json"
require_relative "failure"
require_relative "paths"
require_relative "../mwrap_report"

module MwrapAttach
  # The client side of the helper's control protocol, and all that we
  # know of it: the helper's private runtime directory in the target
  # (/tmp/mwrap.PID.XXXXXX, reached through the target's own descriptor
  # /proc/PID/fd/N, so no path is resolved), the files in it (ctl takes
  # one command a line, out holds one answer a line: "ok ...",
  # "error: ...", after "progress ..." lines for long steps), the lease,
  # and the dumps and object views commands write there.
  class ControlClient
    include Fails
    extend Fails

    # The runtime directory's name, as the helper's mkdtemp makes it.
    RUNDIR_NAME = %r{/mwrap\.\d+\.[A-Za-z0-9]{6}\z}

    # A window's lease: the target detaches by itself when no command came
    # for this long (we renew it every second).
    LEASE_SECONDS = 10

    # The table a window's target writes in the directory as it exits
    # (ctl_server.h: MW_CTL_EXIT_DUMP).
    EXIT_DUMP = "exit.json"

    attr_reader :path

    # Did the command succeed?  (Its answer is "ok ..." or "error: ...".)
    def self.ok?(answer)
      answer.start_with?("ok")
    end

    # The client of TARGET's helper, or nil when it has none.
    def self.find(target)
      fds = Dir.children("/proc/#{target.pid}/fd").map(&:to_i).sort.reverse
      fds.each do |n|
        link = File.readlink("/proc/#{target.pid}/fd/#{n}") rescue next
        next unless link.match?(RUNDIR_NAME)

        dir = IO.for_fd(IO.sysopen("/proc/#{target.pid}/fd/#{n}", O_PATH), autoclose: true)
        st = dir.stat
        return new(target, dir, link) if st.directory? && st.uid == target.uid && (st.mode & 0o777) == 0o700

        dir.close
      rescue SystemCallError
        next
      end
      nil
    rescue SystemCallError
      nil
    end

    # The client of an attached target, or a failure saying it is not.
    def self.of_attached(target)
      find(target) or
        fail!(EXIT[:not_attached], "process #{target.pid} is not attached",
              "attach first: mwrap-attach -p #{target.pid} --keep")
    end

    # Why TARGET, whose helper answered STATS (a look that changes
    # nothing: only its window's owner renews the lease), cannot be
    # attached again: [cause, fix].
    def self.refusal(target, stats)
      pid = target.pid
      unless stats.key?("lease_owner")
        return ["process #{pid} is already attached (--keep)",
                "use --dump, --stats or --detach (or kill -URG #{pid})"]
      end
      owner = stats["lease_owner"].to_i
      left = (stats["lease_left_ms"].to_i / 1000.0).ceil
      if owner.zero? || front_end?(owner)
        by = owner.zero? ? "a window" : "the window of mwrap-attach (pid #{owner})"
        ["process #{pid} is already attached: #{by} runs on it",
         "wait for that window's report, or look meanwhile with --dump or --stats"]
      else
        ["process #{pid} is already attached by a window whose mwrap-attach (pid #{owner}) is gone",
         "it detaches by itself within #{left} s: try again then (or end it now with --detach)"]
      end
    end

    # STATS of TARGET's window, whose mwrap-attach is gone (killed before
    # it could detach, or its lease not yet taken): waits for the window
    # to end by itself (its lease runs out), saying so; nil once it has,
    # else the stats again.
    def self.wait_orphaned(target, stats)
      owner = stats["lease_owner"]
      return stats if owner.nil? || front_end?(owner.to_i)

      left = (stats["lease_left_ms"].to_i / 1000.0).ceil
      warn "mwrap-attach: process #{target.pid} has a window whose mwrap-attach is gone: " \
           "waiting for it to end (within #{left} s)"
      deadline = Time.now + left + 3
      while Time.now < deadline
        return nil unless target.attached?

        sleep 0.2
      end
      (find(target)&.stats rescue nil)
    end

    # Is PID a running mwrap-attach?
    def self.front_end?(pid)
      File.read("/proc/#{pid}/cmdline").include?("mwrap-attach")
    rescue SystemCallError
      false
    end

    # Waits for the helper's first answer: [client, "ok attached ..."].
    def self.wait_attached(target, timeout = 10)
      deadline = Time.now + timeout
      chan = nil
      loop do
        chan ||= find(target)
        text = chan ? chan.answers : ""
        return [chan, Regexp.last_match(0)] if text =~ /^ok attached.*$/
        if (err = text[/^error: .*$/])
          chan.tell_failure_read
          fail!(EXIT[:inject], "the library could not start: #{err}")
        end
        fail!(EXIT[:target_gone], "process #{target.pid} exited during the attach") unless target.alive?
        if Time.now > deadline
          fail!(EXIT[:no_answer], "the library was loaded but its helper never answered",
                chan ? "its answers are in #{chan.path}/out" :
                       "it made no runtime directory: is /tmp (or /var/tmp, /dev/shm) writable by uid #{target.uid} in the target?")
        end
        sleep 0.02
      end
    end

    def initialize(target, dir, path)
      @target = target
      @dir = dir
      @path = path
      @lock = Mutex.new
    end

    # The answers so far ("" before the helper wrote any).
    def answers
      @out ||= open_file("out", File::RDONLY)
      @out.pread(1 << 20, 0)
    rescue EOFError, Errno::ENOENT
      ""
    end

    # Sends one command and waits for its one-line answer; "progress"
    # lines before it extend the deadline.
    def command(cmd, timeout: 10)
      @lock.synchronize { command_locked(cmd, timeout) }
    end

    # Tells a helper that could not start that we read its error: it
    # removes its directory then.
    def tell_failure_read
      open_file("ctl", File::WRONLY | File::APPEND) { |f| f.syswrite("detach\n") }
    rescue StandardError
      nil
    end

    # "stats": its key=value fields.
    def stats
      command("stats").scan(/(\w+)=(\S+)/).to_h
    end

    # Renews the lease, as its owner, every second until the block
    # returns.
    # The renewer is stopped between two renewals, never killed in one:
    # a renewal cut short leaves its answer to be read as the next
    # command's ("detached (ok lease)").
    def leased
      stop = false
      renewer = Thread.new do
        until stop
          command("lease #{Process.pid}") rescue nil
          sleep 1 unless stop
        end
      end
      yield
    ensure
      stop = true
      renewer&.wakeup rescue nil # already ended
      renewer&.join
    end

    # A JSON dump; --scan adds the pointer scan, top: N only the N sites
    # with most live bytes.
    def fetch_dump(tag, scan: false, top: nil, timeout: 10)
      name = scratch_name(tag)
      cmd = +"dump --json"
      cmd << " --scan" if scan
      cmd << " --top #{top}" if top
      ans = command("#{cmd} #{name}", timeout: scan ? timeout + 40 : timeout)
      fail!(EXIT[:no_answer], "dump failed: #{ans}") unless ControlClient.ok?(ans)
      MwrapReport.parse(take(name), "#{path}/#{name}")
    end

    # The Ruby object view (and ObjectSpace.dump_all into dump_all_file);
    # nil, with a warning, when the target cannot give it.
    def fetch_objects(dump_all_file)
      name = scratch_name("objects")
      heap = scratch_name("heap")
      cmd = dump_all_file ? "objects --dump-all #{heap} #{name}" : "objects #{name}"
      ans = command(cmd, timeout: dump_all_file ? 600 : 30)
      unless ControlClient.ok?(ans)
        warn "mwrap-attach: no object view: #{ans.sub(/\Aerror: (objects: )?/, '')}"
        unlink(heap)
        return nil
      end
      objects = JSON.parse(take(name))
      if dump_all_file
        move_out(heap, dump_all_file)
        objects["heap_dump"] = dump_all_file
        warn "mwrap-attach: ObjectSpace.dump_all written to #{dump_all_file}"
      end
      objects
    rescue JSON::ParserError, SystemCallError => e
      warn "mwrap-attach: no object view: #{e.message}"
      nil
    end

    # A full GC (GC.start) run by a Ruby thread at a safe point: the
    # header fields that say so ("gc" => "ran", "gc_ms", tracked live bytes
    # before and after), or ("gc" => "not run", "gc_error") with a warning
    # when the target cannot run it.  The answer may take as long as the
    # GC of a large heap: the wait is long, as for dump_all.
    def run_gc
      ans = command("gc", timeout: 600)
      if ControlClient.ok?(ans)
        f = ans.scan(/(\w+)=(\d+)/).to_h.transform_values(&:to_i)
        return { "gc" => "ran", "gc_ms" => f["us"] / 1000.0, "gc_live_before_bytes" => f["live_before"],
                 "gc_live_after_bytes" => f["live_after"] }
      end
      why = ans.sub(/\Aerror: (gc: )?/, "")
      warn "mwrap-attach: --gc: no GC before the dump: #{why}"
      warn "mwrap-attach: #{gc_fix(why)}"
      { "gc" => "not run", "gc_error" => why }
    end

    # What a failed --gc means for the report that comes anyway.
    def gc_fix(why)
      return "--gc applies to Ruby processes: the report comes without it" if why.start_with?("not a Ruby")

      if why.start_with?("no Ruby thread")
        return "its Ruby threads are busy in C code or blocked without a timeout: " \
               "the report comes without the GC, garbage not yet collected included"
      end
      "the report comes without the GC, garbage not yet collected included"
    end

    # The final dump of a window or of --dump, with what was asked beside
    # it (o: the options --gc, --objects, --dump-all and --scan).  The GC
    # runs first, so the object view and the dump both see what Ruby
    # still holds.
    def final_dump(o, tag)
      gc = run_gc if o[:gc]
      objects = fetch_objects(o[:dump_all]) if o[:objects]
      dump = fetch_dump(tag, scan: o[:scan])
      dump.objects = objects
      dump.header.merge!(gc) if gc
      dump
    end

    # The table the target wrote as it exited during a window (a Dump), or
    # nil when it left none (killed by a signal: nothing runs at exit).
    def exit_dump
      MwrapReport.parse(open_file(EXIT_DUMP, File::RDONLY, &:read), "#{path}/#{EXIT_DUMP}")
    rescue Failure, SystemCallError, ArgumentError
      nil
    end

    # Removes the runtime directory of a target that exited, with what is
    # in it (its exit dump, ctl, out, scratch files of commands cut short),
    # through our descriptor of it: its name no longer resolves from the
    # target once it is gone.  Best effort.
    def remove_dir
      here = "/proc/self/fd/#{@dir.fileno}"
      Dir.children(here).each { |name| unlink(name) }
      # the directory by its name in its parent, if that is still it
      up = "#{here}/../#{File.basename(path)}"
      st = File.lstat(up)
      Dir.rmdir(up) if st.ino == @dir.stat.ino && st.dev == @dir.stat.dev
    rescue SystemCallError
      nil
    end

    private

    def command_locked(cmd, timeout)
      @out ||= open_file("out", File::RDONLY)
      before = @out.stat.size
      open_file("ctl", File::WRONLY | File::APPEND) { |f| f.syswrite("#{cmd}\n") }
      deadline = Time.now + timeout
      shown = 0
      loop do
        data = (@out.pread(1 << 20, before) rescue "")
        done = data.lines.select { |l| l.end_with?("\n") }
        progress = done.take_while { |l| l.start_with?("progress ") }
        progress.drop(shown).each { |l| show_progress(l) }
        deadline = Time.now + timeout if progress.size > shown # still moving
        shown = progress.size
        line = done[progress.size]
        if line
          $stderr.print "\n" if shown.positive? && $stderr.tty?
          return line.chomp
        end

        fail!(EXIT[:target_gone], "process #{@target.pid} exited") unless @target.alive?
        fail!(EXIT[:no_answer], "no answer to '#{cmd}' from process #{@target.pid}",
              "the helper thread may be stuck; its answers are in #{@path}/out") if Time.now > deadline
        sleep 0.02
      end
    rescue Errno::ENOENT
      fail!(EXIT[:not_attached], "process #{@target.pid} is not attached (no control file)",
            "attach first: mwrap-attach -p #{@target.pid} --keep")
    end

    # "progress scan 120/512 MiB": long steps (the pointer scan, large
    # dumps) report as they go.
    def show_progress(line)
      _, what, frac, unit = line.split
      done, total = frac.split("/").map(&:to_i)
      pct = total.positive? ? format(" (%d%%)", 100 * done / total) : ""
      text = "mwrap-attach: #{what}: #{done} of #{total} #{unit}#{pct}"
      $stderr.tty? ? $stderr.print("\r#{text}   ") : warn(text)
    end

    # A name for a file a command writes in the runtime directory.
    def scratch_name(tag)
      "#{tag}.#{Process.pid}.#{MwrapAttach.random_word}.json"
    end

    # NAME in the runtime directory, checked (below); closed after the
    # block when one is given.
    def open_file(name, flags)
      io = open_checked(name, flags)
      return io unless block_given?

      begin
        yield io
      ensure
        io.close
      end
    end

    # Reads NAME, a file a command wrote in the directory, and removes it.
    def take(name)
      text = open_file(name, File::RDONLY, &:read)
      File.unlink("/proc/self/fd/#{@dir.fileno}/#{name}")
      text
    end

    def unlink(name)
      File.unlink("/proc/self/fd/#{@dir.fileno}/#{name}")
    rescue SystemCallError
      nil
    end

    # Copies NAME to FILE (ours to write) and removes it.
    def move_out(name, file)
      open_file(name, File::RDONLY) do |src|
        File.open(file, "wb") { |dst| IO.copy_stream(src, dst) }
      end
      unlink(name)
    end

    # Opens NAME in the runtime directory, a place the target's user
    # controls, without following a symlink and without blocking: first
    # as O_PATH (opening a FIFO or a device has no effect then), checks
    # that it is a regular file of the target's uid with one link, then
    # reopens that same inode with FLAGS.
    def open_checked(name, flags)
      code = EXIT[:not_attached]
      uid = @target.uid
      probe = IO.for_fd(IO.sysopen("/proc/self/fd/#{@dir.fileno}/#{name}",
                                   O_PATH | File::NOFOLLOW), autoclose: true)
      st = probe.stat
      unless st.file? && st.uid == uid && st.nlink == 1
        fail!(code, "refusing #{name} in the runtime directory: #{st.ftype} of uid #{st.uid} " \
                    "with #{st.nlink} links, not a file of uid #{uid}")
      end
      io = File.open("/proc/self/fd/#{probe.fileno}", flags | File::NONBLOCK | File::NOCTTY)
      same = io.stat.ino == st.ino && io.stat.dev == st.dev
      io.close unless same
      fail!(code, "#{name} changed while it was opened") unless same
      io
    rescue Errno::ELOOP
      fail!(code, "refusing #{name} in the runtime directory: a symlink")
    ensure
      probe&.close
    end
  end
end
