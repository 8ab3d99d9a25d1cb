# SPDX-License-Identifier: MIT
# A tiny "service" with a native-memory leak, for `make demo`.
#
# Each request renders a response (short-lived strings: churn, not a
# leak) and, because of a bug, remembers the rendered body in a cache
# that nothing ever evicts.  ObjectSpace sees a few small strings; the
# growth is in their malloc'd buffers, all made on one line below.
#
#   ruby examples/leaky_service.rb [SECONDS]   (default: run until killed)
$stdout.sync = true

CACHE = {}

def render(id)
  header = "HTTP/1.1 200 OK\r\nX-Request: #{id}\r\n\r\n"
  body = "<p>" + ("payload " * 512) + "</p>"        # ~4 KB, freed soon
  header + body
end

def remember(id, response)
  CACHE[id] = response.dup << " "                    # the leak: never evicted
end

def handle(id)
  response = render(id)
  remember(id, response) if id.odd?
  response.bytesize
end

seconds = ARGV[0] ? Float(ARGV[0]) : nil
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
stop = false
%w[INT TERM].each { |sig| trap(sig) { stop = true } }
puts "ready pid=#{Process.pid}"

id = 0
until stop
  20.times { handle(id += 1) }
  sleep 0.01                                          # ~2,000 requests/s
  break if seconds &&
           Process.clock_gettime(Process::CLOCK_MONOTONIC) - started > seconds
end
puts "served #{id} requests, cache holds #{CACHE.size} responses"
