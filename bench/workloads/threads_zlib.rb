# SPDX-License-Identifier: MIT
# Four threads: two churn Ruby objects under the GVL, two compress with
# zlib (whose allocations happen without the GVL, inside libz).
require "zlib"
require_relative "harness"

PAYLOAD = (0...4096).map { |i| (i * 7 % 251).chr }.join * 16

Bench.run do
  n = (400 * Bench.scale).to_i
  churn = 2.times.map do
    Thread.new do
      (n * 40).times { |i| Array.new(8) { |j| "t#{i}-#{j}" * 12 }.join }
    end
  end
  zips = 2.times.map do
    Thread.new do
      n.times do
        z = Zlib::Deflate.new(6)
        z.deflate(PAYLOAD, Zlib::FINISH)
        z.close
      end
    end
  end
  (churn + zips).each(&:join)
end
