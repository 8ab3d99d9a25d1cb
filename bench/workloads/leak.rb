# SPDX-License-Identifier: MIT
# A leak among churn: the line marked "the leak" keeps 1 KiB strings;
# everything else is freed.  The report should rank that line first.
require_relative "harness"

KEEP = []
Bench.run do
  (200_000 * Bench.scale).to_i.times do |i|
    "churn" * 40
    KEEP << ("k" * 1023) if (i % 50).zero? # the leak
    [i, i.to_s * 20, { a: i }]
  end
end
