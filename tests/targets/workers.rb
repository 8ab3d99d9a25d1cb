# SPDX-License-Identifier: MIT
# A master with N forked workers (argv[0], default 2), like Puma or
# Unicorn: each worker keeps allocating 1,000-byte strings on WORK_LINE
# (holding the last 3,000) until killed.  The master prints
# "ready workers=PID,PID work_line=N" and waits for its workers.
$stdout.sync = true
WORK_LINE = __LINE__ + 4
def work
  kept = []
  loop do
    kept << "w" * 1000
    kept.shift if kept.size > 3000
    sleep 0.001
  end
end
n = (ARGV[0] || 2).to_i
pids = Array.new(n) { fork { work } }
puts "ready workers=#{pids.join(',')} work_line=#{WORK_LINE}"
trap("TERM") { pids.each { |p| Process.kill("KILL", p) rescue nil }; exit 0 }
pids.each { |p| Process.wait(p) rescue nil }
