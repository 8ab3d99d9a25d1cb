# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "maps"
require_relative "paths"

module MwrapAttach
  # Our library, made loadable inside the target's mount namespace.
  module Stage
    extend Fails

    def self.our_library
      MwrapAttach.our_file("preload", "libmwrap.so") or
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

    # Returns the library path as the target sees it.  A library already
    # loaded in the target is reused (dlopen finds it by that name); ours
    # when the target shares our filesystem and can read it; else a copy,
    # with liburcu beside it, in a fresh directory in the target's /tmp.
    def self.library_for(target, verbose)
      lib = our_library
      path, deleted = loaded_library(target)
      if path && !deleted
        warn "mwrap-attach: reusing #{path}, already loaded in the target" if verbose
        return path
      end
      warn "mwrap-attach: the library loaded in the target (#{path}) was deleted; loading a new copy" if path
      files = library_files(lib)
      shared = files.all? { |f| same_file?(f, target.path(f)) && readable_by?(target, f) }
      return lib if shared

      dir = stage_library(target, files)
      warn "mwrap-attach: copied the library to #{dir} in the target's filesystem" if verbose
      File.join(dir, File.basename(lib))
    end

    # Copies FILES into a new directory of ours (root's, 0755) under the
    # target's /tmp (else /dev/shm, /var/tmp), and returns its name as the
    # target sees it.  Everything goes through descriptors: the parent is
    # opened without following a symlink (under /proc/PID/root an absolute
    # one would resolve on our side), the directory is made by mkdir and
    # checked by fstat, the files are created O_EXCL | O_NOFOLLOW.  Nothing
    # the target's user controls is followed or written through.  The copy
    # stays while the target may map it: a later attach reuses it.
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
      File.join(base, name)
    ensure
      if made # failed half way: remove what we made, through the same fds
        files.each { |f| File.unlink("/proc/self/fd/#{dir.fileno}/#{File.basename(f)}") rescue nil } if dir
        Dir.rmdir("/proc/self/fd/#{parent.fileno}/#{made}") rescue nil
      end
      dir&.close
      parent&.close
    end

    private_class_method :our_library, :library_files, :same_file?, :readable_by?,
                         :loaded_library, :stage_library, :stage_in
  end
end
