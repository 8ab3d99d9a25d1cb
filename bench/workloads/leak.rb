# A leak among churn: LEAK_LINE keeps 1 KiB strings; everything else is
# freed.  The report should rank LEAK_LINE first.
require_relative "harness"

KEEP = []
LEAK_LINE = __LINE__ + 4
Bench.run do
  (200_000 * Bench.scale).to_i.times do |i|
    "churn" * 40
    KEEP << ("k" * 1023) if (i % 50).zero?
    [i, i.to_s * 20, { a: i }]
  end
end
