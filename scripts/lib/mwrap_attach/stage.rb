# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "maps"
require_relative "paths"

module MwrapAttach
  # Our library, made loadable inside the target's mount namespace.
  module Stage
    extend Fails

    # Our libmwrap.so built for the target's C library; where there is no
    # such build, the machine's own, which mwrap-inject refuses in one
    # line saying which build to load if it is for the other C library
    # (inject/checks/libcmatch.c).
    def self.our_library(target)
      libc = begin
        Maps.libc(target.pid)&.last
      rescue SystemCallError
        nil # gone: the injector says so
      end
      MwrapAttach.our_file(:lib, "libmwrap.so", libc: libc || OWN_LIBC) or
        fail!(EXIT[:library], "cannot find libmwrap.so next to #{SCRIPT_DIR}",
              "run 'make' in the source tree, or 'make install'")
    end

    # libmwrap.so and its liburcu: the copies `make` and `make install` put
    # beside it (found through its RUNPATH=$ORIGIN), else the ones it
    # resolves here.
    def self.library_files(lib)
      bundled = Dir.glob(File.join(File.dirname(lib), "liburcu*.so.*")).sort
      return [lib] + bundled unless bundled.empty?

      deps = `ldd #{lib} 2>/dev/null`.lines.filter_map { |l| l[/=>\s*(\S*liburcu\S*)/, 1] }
      [lib] + deps.map { |d| File.realpath(d) rescue d }
    end

    def self.same_file?(a, b)
      sa = File.stat(a)
      sb = File.stat(b)
      sa.dev == sb.dev && sa.ino == sb.ino
    rescue SystemCallError
      false
    end

    # Can the target's user read FILE and reach it?
    def self.readable_by?(target, file)
      return true if target.uid == 0

      st = File.stat(file)
      return false unless st.uid == target.uid || (st.mode & 0o004) != 0

      parts = file.split("/")[0..-2]
      (1...parts.size).all? { |i| (File.stat(parts[0..i].join("/")).mode & 0o001) != 0 }
    rescue SystemCallError
      false
    end

    # The libmwrap.so mapped in the target, as maps names it: [path, deleted?].
    def self.loaded_library(target)
      path = Maps.paths(target.pid).find { |p| p.match?(%r{/libmwrap\.so( \(deleted\))?\z}) }
      path && [path.delete_suffix(" (deleted)"), path.end_with?(" (deleted)")]
    rescue SystemCallError
      nil
    end

    # Returns [path, copy]: the library path as the target sees it, and
    # the Copy made for it (nil when none was).  A library already loaded
    # in the target is reused (dlopen finds it by that name); ours when
    # the target shares our filesystem and can read it, unless the target
    # has a deleted library of that name loaded (ours replaced since, by
    # a rebuild or an upgrade: dlopen would find the old one by its name,
    # and mwrap-inject none by its file); else a copy, with liburcu beside
    # it, in a fresh directory in the target's /tmp, which the caller
    # settles once the injection is over.
    def self.library_for(target, verbose)
      lib = our_library(target)
      path, deleted = loaded_library(target)
      if path && !deleted
        warn "mwrap-attach: reusing #{path}, already loaded in the target" if verbose
        return [path, nil]
      end
      warn "mwrap-attach: the library loaded in the target (#{path}) was deleted; loading a new copy" if path
      files = library_files(lib)
      shared = files.all? { |f| same_file?(f, target.path(f)) && readable_by?(target, f) }
      return [lib, nil] if shared && !(path && [lib, (File.realpath(lib) rescue lib)].include?(path))

      copy = stage_library(target, files)
      warn "mwrap-attach: copied the library to #{copy.dir} in the target's filesystem" if verbose
      [copy.path, copy]
    end

    # Copies FILES into a new directory of ours (root's, 0755) under the
    # target's /tmp (else /dev/shm, /var/tmp), and returns it as a Copy.
    # Everything goes through descriptors: the parent is opened without
    # following a symlink (under /proc/PID/root an absolute one would
    # resolve on our side), the directory is made by mkdir and checked by
    # fstat, the files are created O_EXCL | O_NOFOLLOW.  Nothing the
    # target's user controls is followed or written through.
    def self.stage_library(target, files)
      errors = []
      %w[/tmp /dev/shm /var/tmp].each do |base|
        return stage_in(target, base, files)
      rescue SystemCallError, Failure => e
        errors << "#{base}: #{e.message.sub(/ @ .*/, '')}"
      end
      fail!(EXIT[:library], "cannot copy libmwrap.so into the target's filesystem: #{errors.join('; ')}",
            "give the target a writable /tmp, or make #{files.first} readable by uid #{target.uid} " \
            "at the same path inside its filesystem")
    end

    def self.stage_in(target, base, files)
      parent = IO.for_fd(IO.sysopen(target.path(base), O_PATH | File::NOFOLLOW), autoclose: true)
      fail!(EXIT[:library], "not a directory") unless parent.stat.directory?
      name = "mwrap-lib.#{MwrapAttach.random_word}"
      Dir.mkdir("/proc/self/fd/#{parent.fileno}/#{name}", 0o700)
      dir = IO.for_fd(IO.sysopen("/proc/self/fd/#{parent.fileno}/#{name}",
                                 O_PATH | File::NOFOLLOW), autoclose: true)
      st = dir.stat
      fail!(EXIT[:library], "#{name} is not the directory we made") unless st.directory? && st.uid == Process.euid
      made = name
      copy = Copy.new(parent, dir, base, name, files.map { |f| File.basename(f) })
      files.each do |f|
        File.open("/proc/self/fd/#{dir.fileno}/#{File.basename(f)}",
                  File::WRONLY | File::CREAT | File::EXCL | File::NOFOLLOW, 0o600) do |out|
          File.open(f, "rb") { |src| IO.copy_stream(src, out) }
          out.chmod(0o644)
        end
      end
      # readable only now that it is complete
      File.chmod(0o755, "/proc/self/fd/#{dir.fileno}")
      made = nil
      copy
    ensure
      if made # failed half way: remove what we made, through the same fds
        copy ? copy.remove : (Dir.rmdir("/proc/self/fd/#{parent.fileno}/#{made}") rescue nil)
      end
      unless copy && !made # the Copy keeps them open
        dir&.close
        parent&.close
      end
    end

    # A copy of our library made for one target by stage_in, held by
    # descriptors of its directory and of that directory's parent until
    # the injection is over.  Then (settle) the directory, root's so far,
    # is handed over to the target's user if the target has the library
    # loaded from it: its process removes the copy when it exits
    # (preload/control/staged.c, armed by the attach option staged:1),
    # and needs it until then.  A copy the target did not load is removed
    # at once.  Both through the descriptors, never a path.
    class Copy
      attr_reader :dir, :path

      def initialize(parent, dirio, base, name, files)
        @parent = parent
        @dirio = dirio
        @name = name
        @files = files
        @dir = File.join(base, name)
        @path = File.join(@dir, "libmwrap.so")
      end

      def settle(target, verbose)
        if mapped_in?(target)
          uid = Stage.fs_uid(target)
          File.chown(uid, nil, "/proc/self/fd/#{@dirio.fileno}")
          warn "mwrap-attach: #{@dir} is now uid #{uid}'s; the target removes it when it exits" if verbose
        else
          remove
          warn "mwrap-attach: removed #{@dir}, which the target did not load" if verbose
        end
      rescue SystemCallError => e
        warn "mwrap-attach: #{@dir} in the target's filesystem: #{e.message}"
      ensure
        close
      end

      # Our files, then the directory (left if anything else is in it).
      def remove
        @files.each { |f| File.unlink("/proc/self/fd/#{@dirio.fileno}/#{f}") rescue nil }
        Dir.rmdir("/proc/self/fd/#{@parent.fileno}/#{@name}") rescue nil
      end

      def close
        @dirio.close unless @dirio.closed?
        @parent.close unless @parent.closed?
      end

      private

      # Does the target map our libmwrap.so?  By its inode and the name
      # of our directory: maps may name it from our root (a chroot).
      def mapped_in?(target)
        ino = File.stat("/proc/self/fd/#{@dirio.fileno}/libmwrap.so").ino
        tail = "/#{@name}/libmwrap.so"
        File.foreach("/proc/#{target.pid}/maps").any? do |l|
          f = l.split(" ", 6)
          f[4].to_i == ino && f[5].to_s.strip.delete_suffix(" (deleted)").end_with?(tail)
        end
      rescue SystemCallError
        false
      end
    end

    # The uid the target's process acts with on files (Uid's fourth field).
    def self.fs_uid(target)
      File.read("/proc/#{target.pid}/status")[/^Uid:\s+\d+\s+\d+\s+\d+\s+(\d+)/, 1].to_i
    end

    private_class_method :our_library, :library_files, :same_file?, :readable_by?,
                         :loaded_library, :stage_library, :stage_in
  end
end
