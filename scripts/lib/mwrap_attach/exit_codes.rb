# SPDX-License-Identifier: MIT
# frozen_string_literal: true

# The exit codes of the commands, written here only.  The front ends
# exit with them by name (MwrapAttach::EXIT, mwrap-report's EXIT_REPORT),
# --help prints them (exit_codes_help), the man pages' EXIT STATUS
# sections are written from them (dev/man-exit-status, `make man`),
# and tests/test_exit_codes.py checks that all of these agree.
# mwrap-inject's own codes live in inject/base/exitcodes.h (its man page is
# checked against `mwrap-inject --exit-codes`).
module MwrapAttach
  # command => [[number, name, meaning], ...]; one code per failure class,
  # each failure printed with its cause and its fix.
  EXIT_CODES = {
    "mwrap-attach" => [
      [0, :ok, "done"],
      [1, :internal, "mwrap-attach itself failed (with many processes: the run for one " \
                     "of them died of a signal, which is named)"],
      [2, :usage, "usage or bad option"],
      [3, :no_such_process, "no such process (a zombie or a kernel thread is none either)"],
      [4, :permission, "permission denied: run as root, or as the process's owner with " \
                       "kernel.yama.ptrace_scope 0; in a container add --cap-add=SYS_PTRACE"],
      [5, :already_traced, "already traced by another debugger (it is named)"],
      [6, :stopped, "the process is stopped (state T)"],
      [7, :no_gdb, "gdb missing or unfit (--backend=gdb)"],
      [8, :library, "the library cannot be made loadable in the process (a statically " \
                    "linked program, files it cannot read)"],
      [9, :inject, "injection failed"],
      [10, :no_answer, "no answer from the process"],
      [11, :target_gone, "the process exited during the attach, or during the window " \
                         "before anything was collected"],
      [12, :not_attached, "not attached (--dump, --stats, --detach)"],
      [13, :already_attached, "already attached"],
      [14, :seccomp, "its seccomp filter would kill it on (or deny) a syscall the attach " \
                     "makes, or cannot be shown safe"],
      [15, :io, "the report could not be written (-o FILE: it went to stdout instead)"],
      [16, :exited, "the process exited during the window: the report covers the time " \
                    "until then (its table as it exited; only the top sites of the " \
                    "window's last sample if it was killed by a signal); with --every, " \
                    "the process exited, in a window or between two"],
      [17, :interrupted, "interrupted (Ctrl-C, SIGTERM) before the window began: the process was " \
                         "left untouched, or detached at once"],
    ],
    "mwrap-report" => [
      [0, :ok, "done"],
      [2, :usage, "usage or bad option, or -o FILE that exists or cannot be written"],
      [3, :unreadable, "a dump cannot be read"],
    ],
    # mwrap execs the command: its status is the command's, except these
    "mwrap" => [
      [2, :usage, "usage (no command given)"],
      [127, :not_found, "libmwrap.so or the command cannot be found"],
    ],
  }.freeze

  # What a man page's EXIT STATUS says before the codes, where it says more
  # than the codes.
  EXIT_CODES_INTRO = {
    "mwrap" => "That of COMMAND, which mwrap runs in its place; or:",
  }.freeze

  # { name => number } of COMMAND's codes.
  def self.exit_codes(command)
    EXIT_CODES.fetch(command).to_h { |number, name, _| [name, number] }.freeze
  end

  # COMMAND's codes as --help prints them: "exit codes:" then one
  # "  N  meaning" each, the meaning wrapped at WIDTH columns.
  def self.exit_codes_help(command, width = 76)
    EXIT_CODES.fetch(command).map do |number, _, meaning|
      lines = [+""]
      meaning.split.each do |word|
        lines << +"" if !lines.last.empty? && 7 + lines.last.size + 1 + word.size > width
        lines.last << " " unless lines.last.empty?
        lines.last << word
      end
      format("  %3d  %s", number, lines.join("\n#{' ' * 7}"))
    end.unshift("exit codes:").join("\n")
  end
end
