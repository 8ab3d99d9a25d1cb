# SPDX-License-Identifier: MIT
# Growth-series target: a leak that rises to the end beside a cache that
# fills, then levels off.  Prints "ready ... leak_line=L cache_line=C",
# then on "go" starts a loop of 50 ms ticks: each tick keeps one string of
# LEAK_SIZE bytes (LEAK_LINE) and, for the first CACHE_TICKS ticks, one of
# CACHE_SIZE bytes (CACHE_LINE).  On EOF prints "bye LEAKED SECONDS" (the
# leak's bytes and how long it ran) and exits 0.
$stdout.sync = true
LEAK_SIZE = 20_000
CACHE_SIZE = 100_000
CACHE_TICKS = 40
LEAK = []
CACHE = []
LEAK_LINE = __LINE__ + 2
def leak_tick
  LEAK << ("L" * (LEAK_SIZE - 1))
end
CACHE_LINE = __LINE__ + 2
def cache_tick
  CACHE << ("C" * (CACHE_SIZE - 1))
end
puts "ready #{Process.pid} leak_line=#{LEAK_LINE} cache_line=#{CACHE_LINE}"
$stdin.gets
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
ticks = 0
loop do
  break if IO.select([$stdin], nil, nil, 0.05) && $stdin.read_nonblock(64, exception: false).nil?

  leak_tick
  cache_tick if ticks < CACHE_TICKS
  ticks += 1
end
puts format("bye %d %.2f", LEAK.size * LEAK_SIZE, Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)
