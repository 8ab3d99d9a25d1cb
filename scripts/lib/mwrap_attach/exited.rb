# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "window"

module MwrapAttach
  # A target that exits during its window (a batch job, a worker that
  # ends): its report covers the window until then.  In a window the
  # library writes its table as the process exits (ctl_server.h:
  # mw_ctl_at_exit) and leaves the runtime directory to us; a process
  # killed by a signal runs nothing at exit, and its report is the
  # window's last sample, the top sites only.
  module Exited
    extend Fails

    # The dump to report for TARGET, which exited SECONDS into its window
    # on CHAN (SERIES: the window's growth series, LAST: its last sample,
    # or nil; o: the options), its header saying so; removes the runtime
    # directory.  Fails (target_gone) when nothing was collected.
    def self.dump(target, chan, o, seconds, series, last)
      dump = chan.exit_dump
      chan.remove_dir
      pid = target.pid
      gone = format("process %d exited %.1f s into the window", pid, seconds)
      if dump
        Window.add(series, seconds, dump)
        warn "mwrap-attach: #{gone}; the report is its table as it exited"
      elsif last&.sites&.any?
        dump = last
        dump.header.merge!("exit_partial_top" => Window::SERIES_TOP,
                           "exit_partial_sample_seconds" => series.t.last.to_f.round(1))
        warn "mwrap-attach: #{gone} without writing its table (killed by a signal?); " \
             "the report is partial: the top #{Window::SERIES_TOP} sites of the last sample"
      else
        fail!(EXIT[:target_gone], "#{gone}, before anything was collected",
              "to see a short-lived process from its start, run it under mwrap: mwrap CMD...")
      end
      dump.header["exited_after_seconds"] = seconds.round(1)
      skipped = %i[gc objects scan].select { |k| o[k] }.map { |k| "--#{k}" }
      warn "mwrap-attach: #{skipped.join(', ')}: not done, the process had exited" unless skipped.empty?
      dump
    end
  end
end
