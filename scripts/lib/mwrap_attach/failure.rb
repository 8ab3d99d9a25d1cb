# SPDX-License-Identifier: MIT
# frozen_string_literal: true

# mwrap-attach's failures: one exit code per failure class, each raised
# with one line of cause and one of fix, printed by the main script.
module MwrapAttach
  # Exit codes, one per failure class (also in --help, the man page and
  # the README); exited is no failure: the process exited during the
  # window, and the report covers the time until then.
  EXIT = {
    ok: 0, usage: 2, no_such_process: 3, permission: 4, already_traced: 5,
    stopped: 6, no_gdb: 7, library: 8, inject: 9, no_answer: 10,
    target_gone: 11, not_attached: 12, already_attached: 13, seccomp: 14,
    io: 15, exited: 16,
  }.freeze

  class Failure < StandardError
    attr_reader :code, :fix

    def initialize(code, message, fix = nil)
      super(message)
      @code = code
      @fix = fix
    end
  end

  # fail!(code, message, fix) for every class and module that may fail.
  module Fails
    private

    def fail!(code, message, fix = nil)
      raise Failure.new(code, message, fix)
    end
  end
end
