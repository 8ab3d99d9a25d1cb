# SPDX-License-Identifier: MIT
# Single-threaded, malloc-heavy Ruby: JSON generate/parse, strings and
# arrays built and dropped, with some plain computation between them, at
# about 2.25 M malloc-family calls per second (the rate of the anchor
# workload the performance goals were set on).
require "json"
require_relative "harness"

DOC = { "id" => 1, "name" => "n" * 40, "tags" => %w[alpha beta gamma delta],
        "nested" => { "k" => [1, 2, 3], "s" => "v" * 100 } }.freeze

Bench.run do
  (40_000 * Bench.scale).to_i.times do |i|
    s = JSON.generate(DOC)
    h = JSON.parse(s)
    a = Array.new(16) { |j| "item#{j}" * 6 }
    a.join(",") << h["name"]
    "#{i}" * 30
    x = 0
    220.times { |k| x += (k * i) % 7 + h["nested"]["k"][k % 3] }
    x
  end
end
