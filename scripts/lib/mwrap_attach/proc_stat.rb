# SPDX-License-Identifier: MIT
# frozen_string_literal: true

module MwrapAttach
  # /proc/PID/stat, the one reader of it: "PID (comm) state ppid ...".
  # The kernel puts any bytes in comm, ") Z " included, so comm ends at
  # the last ')'.
  module ProcStat
    # The fields after comm, from the state (index 0; ppid 1, flags 6),
    # or nil when the process is gone.
    def self.fields(pid)
      st = File.binread("/proc/#{pid}/stat")
      st[(st.rindex(")") + 2)..].split
    rescue SystemCallError
      nil
    end
  end
end
