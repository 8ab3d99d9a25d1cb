# SPDX-License-Identifier: MIT
# An idle Ruby process for the object view: every thread blocked for
# SECONDS (argv[1], default 3) in one way (argv[0]), then it prints what
# the blocking call returned and how long it took, and exits.
#   sleep   Kernel#sleep            select  IO.select on an idle pipe
#   join    Thread#join             queue   Queue#pop fed by a thread
$stdout.sync = true
mode = ARGV[0]
secs = Float(ARGV[1] || 3)
r, _w = IO.pipe
puts "ready"
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
got = case mode
      when "sleep" then sleep(secs)
      when "select" then IO.select([r], nil, nil, secs).inspect
      when "join" then Thread.new { sleep secs; :joined }.value
      when "queue"
        q = Queue.new
        Thread.new { sleep secs; q << :popped }
        q.pop
      end
printf("%s %s %.2f\n", mode, got, Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0)
