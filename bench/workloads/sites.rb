# Many call sites: BENCH_SITES distinct lines (generated and eval'ed),
# each allocating a 64-byte string per round; one round's strings are
# kept, so live blocks grow with the sites.  BENCH_ROUNDS rounds.
require_relative "harness"

SITES = Integer(ENV.fetch("BENCH_SITES", "1000"))
ROUNDS = Integer(ENV.fetch("BENCH_ROUNDS", "20"))
KEEP = []
code = +"def one_round(out)\n"
SITES.times { |i| code << "  out << ('s#{i % 10}' * 32)\n" }
code << "end\n"
eval(code, binding, "sites_#{SITES}.rb", 1)

Bench.run do
  ROUNDS.times do |r|
    out = []
    one_round(out)
    KEEP.replace(out) if r == ROUNDS - 1
  end
end
