# SPDX-License-Identifier: MIT
# frozen_string_literal: true

module MwrapAttach
  # /proc/PID/maps read as one view, as the injector reads it
  # (inject/process/maps.c).  The kernel hands the file out a page per read(),
  # looking at the memory map afresh each time: one pass over a process
  # that maps and unmaps memory all the time is no picture of any one
  # moment.  So whole passes are repeated until two agree; if TRIES never
  # do, the union of their lines in address order, so that a line present
  # in any pass is found.
  module Maps
    TRIES = 8

    # The lines of PID's maps, without their newlines.  Raises what
    # reading the file raises (Errno::ENOENT, ESRCH, EACCES).
    def self.lines(pid)
      passes = []
      TRIES.times do
        text = File.read("/proc/#{pid}/maps")
        return text.lines(chomp: true) if text == passes.last

        passes << text
      end
      passes.flat_map { |t| t.lines(chomp: true) }.uniq
            .sort_by { |l| [l[/\A\h+/].to_i(16), l] }
    end

    # The path (or [name]) of each line that has one, as maps shows it.
    def self.paths(pid)
      lines(pid).filter_map { |l| l.split(" ", 6)[5]&.strip }.reject(&:empty?)
    end

    # [path, :glibc or :musl] of the C library PID maps, nil for none.
    # Its names as inject/process/maps.c and common/libc.h know them:
    # glibc's libc.so.6 (libc-2.x.so before 2.34); musl's loader, which is
    # its libc (ld-musl-ARCH.so.1, Alpine's libc.musl-ARCH.so.1 links to
    # it), or Debian's /usr/lib/ARCH-linux-musl/libc.so.
    def self.libc(pid)
      paths(pid).each do |path|
        base = File.basename(path)
        return [path, :musl] if base.start_with?("ld-musl-", "libc.musl-") || path.include?("-linux-musl/")
        return [path, :glibc] if base.start_with?("libc.so", "libc-")
      end
      nil
    end
  end
end
