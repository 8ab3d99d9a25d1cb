# SPDX-License-Identifier: MIT
# A busy loop that counts its iterations: what an attach costs a target
# that allocates all the time (docs/usage.md: --every's cost).  Prints
# "ready PID leak_line=N", then each second "tick T COUNT" (T seconds
# since ready, COUNT iterations in that second); after SECONDS (ARGV[0],
# default 70) "done TOTAL" and exits 0.  Each iteration makes a string,
# an array of 8 short strings and a small hash, and drops them; one in
# 1000 keeps a 256-byte string (LEAK_LINE), a slow leak to be found.
$stdout.sync = true
seconds = Float(ARGV[0] || 70)
KEEP = []
LEAK_LINE = __LINE__ + 2
def keep
  KEEP << ("k" * 256)
end
puts "ready #{Process.pid} leak_line=#{LEAK_LINE}"
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
start = clock.call
tick = start + 1
count = total = 0
loop do
  s = "item-#{count}" * 4
  a = Array.new(8) { |i| "#{s[0, 8]}:#{i}" }
  h = { s => a, size: a.size }
  keep if (total % 1000).zero? && h[:size] == 8
  count += 1
  total += 1
  next unless (total & 255).zero? && (now = clock.call) >= tick

  puts format("tick %d %d", (tick - start).round, count)
  count = 0
  tick += 1
  break if now - start >= seconds
end
puts "done #{total}"
