# SPDX-License-Identifier: MIT
# Many call sites: BENCH_SITES distinct lines (generated and eval'ed in
# files of 10,000 lines, so that a million sites compile quickly), each
# allocating a 64-byte string per round; one round's strings are kept,
# so live blocks grow with the sites.  BENCH_ROUNDS rounds: the first,
# where a tracer meets every site, is timed apart ("first") from the
# rest ("steady"), every round from the same line: with stacks, a site's
# allocation has one stack in every round (when the first round ran from
# a line of its own, the second met every stack anew).
require_relative "harness"

SITES = Integer(ENV.fetch("BENCH_SITES", "1000"))
ROUNDS = Integer(ENV.fetch("BENCH_ROUNDS", "20"))
# a string that calls malloc: from Ruby 3.2 one of 64 bytes is embedded
REPEAT = RUBY_VERSION >= "3.2" ? 400 : 32
PER_FILE = 10_000
KEEP = []
CHUNKS = (0...SITES).step(PER_FILE).map do |first|
  lines = [PER_FILE, SITES - first].min
  name = "round_#{first}"
  code = +"def #{name}(out)\n"
  lines.times { |i| code << "  out << ('s#{i % 10}' * #{REPEAT})\n" }
  code << "end\n"
  eval(code, binding, "sites_#{SITES}_#{first}.rb", 1)
  name.to_sym
end

def round(keep)
  out = []
  CHUNKS.each { |m| send(m, out) }
  KEEP.replace(out) if keep
end

Bench.run do
  (1..ROUNDS).each { |r| Bench.phase(r == 1 ? "first" : "steady") { round(r == ROUNDS) } }
end
