# SPDX-License-Identifier: MIT
# The leaking service of make kube-demo (deploy/kube/demo-pod.yaml): the
# bug of examples/leaky_service.rb behind a small HTTP server (Ruby's
# standard library only), so that load comes from outside.
#
# Each request renders a response (short-lived strings: churn, not a
# leak) and, because of a bug, every odd one is remembered in a cache
# that nothing ever evicts.  The growth is in those strings' malloc'd
# buffers, all made on one line below.
#
#   ruby leaky_web.rb     (PORT, default 8080; SIGTERM ends it)
require "socket"
$stdout.sync = true

CACHE = {}

def render(id)
  body = "<p>" + ("payload " * 512) + "</p>"        # ~4 KB, freed soon
  "HTTP/1.1 200 OK\r\nX-Request: #{id}\r\nContent-Length: #{body.bytesize}\r\n" \
    "Connection: close\r\n\r\n" + body
end

def remember(id, response)
  CACHE[id] = response.dup << " "                    # the leak: never evicted
end

def handle(id)
  response = render(id)
  remember(id, response) if id.odd?
  response
end

port = Integer(ENV.fetch("PORT", "8080"))
server = TCPServer.new("0.0.0.0", port)
id = 0
%w[INT TERM].each do |sig|
  trap(sig) do
    puts "served #{id} requests, cache holds #{CACHE.size} responses"
    exit
  end
end
puts "ready pid=#{Process.pid} port=#{port}"

loop do
  client = server.accept
  begin
    # the request line and headers, read and ignored
    while (line = client.gets) && line != "\r\n"
    end
    client.write(handle(id += 1))
  rescue SystemCallError
    # a client that went away
  ensure
    client.close
  end
end
