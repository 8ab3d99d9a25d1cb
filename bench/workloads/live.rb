# Many live blocks: BENCH_LIVE strings of 40 bytes (one malloc each, kept
# in an Array), allocated from one line, then BENCH_CHURN short-lived
# 40-byte strings (a malloc and a free each) while they are all live:
# the per-call cost with a large live table, timed on its own
# (churn_wall) apart from filling the table.
require_relative "harness"

LIVE = Integer(ENV.fetch("BENCH_LIVE", "100000"))
CHURN = Integer(ENV.fetch("BENCH_CHURN", "2000000"))
KEEP = Array.new(LIVE)

Bench.run do
  i = 0
  while i < LIVE
    KEEP[i] = "l" * 40
    i += 1
  end
  GC.start	# the churn then runs minor GCs only, in every mode alike
  Bench.phase("churn_wall") do
    i = 0
    while i < CHURN
      s = "c" * 40
      i += 1
    end
  end
end
