# SPDX-License-Identifier: MIT
# frozen_string_literal: true

# mwrap-attach's failures: one exit code per failure class, each raised
# with one line of cause and one of fix, printed by the main script.
require_relative "exit_codes"

module MwrapAttach
  # Exit codes by name, one per failure class, from the one table
  # (exit_codes.rb); exited is no failure: the process exited during the
  # window, and the report covers the time until then.
  EXIT = exit_codes("mwrap-attach")

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
