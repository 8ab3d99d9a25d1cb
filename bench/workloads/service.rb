# SPDX-License-Identifier: MIT
# A request loop with a heartbeat: serves fake requests as fast as it can
# and prints "beat N" (requests served so far) every 0.25 s, until stdin
# closes.
$stdout.sync = true
require "json"

puts "ready #{Process.pid}"
stop = false
Thread.new { $stdin.read; stop = true }
served = 0
next_beat = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 0.25
until stop
  req = { "path" => "/items/#{served}", "headers" => { "accept" => "json" } }
  body = JSON.generate({ "id" => served, "items" => Array.new(10) { |i| "x#{i}" * 10 } })
  "HTTP/1.1 200 OK\r\n#{req['path']}\r\n\r\n#{body}".bytesize
  served += 1
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  if now >= next_beat
    puts format("beat %d %.6f", served, now)
    next_beat = now + 0.25
  end
end
