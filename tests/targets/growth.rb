# SPDX-License-Identifier: MIT
# Growth-series target.
#
# Default: a leak that rises to the end beside a cache that fills, then
# levels off.  Prints "ready ... leak_line=L cache_line=C", then on "go"
# starts a loop of 50 ms ticks: each tick keeps one string of LEAK_SIZE
# bytes (LEAK_LINE) and, for the first CACHE_TICKS ticks, one of
# CACHE_SIZE bytes (CACHE_LINE).  On EOF prints "bye LEAKED SECONDS" (the
# leak's bytes and how long it ran) and exits 0.
#
# "ruby growth.rb steady": a steady process with a buffer that jumps once
# per window, then holds still, like a server's request buffer.  Prints
# "ready ... leak_line=L buffer_line=B", then runs 50 ms ticks until EOF:
# each tick keeps one string of LEAK_SIZE bytes (LEAK_LINE: a steady
# leak) and replaces one of NOISE_SLOTS strings of 1..NOISE_MAX bytes on
# BUFFER_LINE (the old one freed at once by String#clear: noise around a
# level).  "step" frees the buffer, and STEP_TICKS ticks later makes a new
# one of BUFFER_SIZE bytes on BUFFER_LINE (a window attached before
# that sees a jump, then a flat line), answering "stepped".  On EOF
# prints "bye" and exits 0.
$stdout.sync = true
LEAK_SIZE = 20_000
CACHE_SIZE = 100_000
CACHE_TICKS = 40
BUFFER_SIZE = 2_000_000
NOISE_SLOTS = 8
NOISE_MAX = 200_000
STEP_TICKS = 6
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
BUFFER_LINE = __LINE__ + 2
def buffer(size)
  "B" * (size - 1)
end

# Waits up to 50 ms for a line on stdin: the line, "" when none came,
# nil at EOF.
def next_command
  return "" unless IO.select([$stdin], nil, nil, 0.05)

  $stdin.gets
end

if ARGV.first == "steady"
  puts "ready #{Process.pid} leak_line=#{LEAK_LINE} buffer_line=#{BUFFER_LINE}"
  rng = Random.new(1)
  slots = Array.new(NOISE_SLOTS) { buffer(rng.rand(1..NOISE_MAX)) }
  buf = buffer(BUFFER_SIZE)
  step_in = nil
  while (cmd = next_command)
    if cmd.strip == "step"
      buf.clear # freed now, not at the next GC
      step_in = STEP_TICKS
    end
    leak_tick
    i = rng.rand(NOISE_SLOTS)
    slots[i].clear
    slots[i] = buffer(rng.rand(1..NOISE_MAX))
    next unless step_in && (step_in -= 1) <= 0

    buf = buffer(BUFFER_SIZE)
    step_in = nil
    puts "stepped"
  end
  puts "bye"
  exit 0
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
