# SPDX-License-Identifier: MIT
# Many live blocks: BENCH_LIVE strings of 40 bytes (one malloc each, kept
# in an Array), allocated from one line, then BENCH_CHURN short-lived
# 40-byte strings (a malloc and a free each) while they are all live:
# the per-call cost with a large live table, timed on its own
# (churn_wall) apart from filling the table.
require_relative "harness"

LIVE = Integer(ENV.fetch("BENCH_LIVE", "100000"))
CHURN = Integer(ENV.fetch("BENCH_CHURN", "2000000"))
KEEP = Array.new(LIVE)
# From Ruby 3.2 a 40-byte string lives inside its object and calls no
# malloc: there a block is a Fiddle pointer to 40 malloc'd bytes.
if RUBY_VERSION >= "3.2"
  require "fiddle"
  def block = Fiddle::Pointer.malloc(40, Fiddle::RUBY_FREE)
else
  def block = "l" * 40
end

Bench.run do
  i = 0
  while i < LIVE
    KEEP[i] = block
    i += 1
  end
  GC.start	# the churn then runs minor GCs only, in every mode alike
  Bench.phase("churn_wall") do
    i = 0
    while i < CHURN
      s = block
      i += 1
    end
  end
end
