# SPDX-License-Identifier: MIT
# --stacks target: a service whose leak is one gem-like helper
# (gemlike/helper.rb) called from two application lines at very
# different rates.  Prints "ready PID upload_line=N ping_line=N
# keep_line=N", then obeys one command per line on stdin:
#   serve R SIZE [U P [D]]   R rounds of U uploads and P pings (default
#                            10 and 1), each keeping SIZE bytes through
#                            the helper, D of its frames deep (default 1)
# On EOF prints "bye N" and exits 0.
$stdout.sync = true
require_relative "gemlike/helper"

UPLOAD_LINE = __LINE__ + 2
def handle_upload(n, size, depth)
  n.times { depth > 1 ? GemLike.remember_deep(size, depth) : GemLike.remember(size) }
end

PING_LINE = __LINE__ + 2
def handle_ping(n, size, depth)
  n.times { depth > 1 ? GemLike.remember_deep(size, depth) : GemLike.remember(size) }
end

puts "ready #{Process.pid} upload_line=#{UPLOAD_LINE} ping_line=#{PING_LINE} " \
     "keep_line=#{GemLike::KEEP_LINE}"
while (line = $stdin.gets)
  cmd, *args = line.split
  case cmd
  when "serve"
    size = Integer(args[1])
    uploads = Integer(args[2] || 10)
    pings = Integer(args[3] || 1)
    depth = Integer(args[4] || 1)
    Integer(args[0]).times do
      handle_upload(uploads, size, depth)
      handle_ping(pings, size, depth)
    end
    puts "served #{args[0]}"
  end
end
puts "bye #{GemLike::STORE.size}"
