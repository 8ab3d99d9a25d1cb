# Target for the pointer scan and the object view: on "go" it keeps
# 2,000 strings of 4,000 bytes (referenced from a global) and leaks
# 2,000 Fiddle.malloc blocks of 4,000 bytes (addresses dropped), then
# prints "done"; "exit" ends it.
require "fiddle"
$stdout.sync = true
KEPT = []
puts "ready"
while (line = $stdin.gets)
  case line.strip
  when "go"
    2000.times { KEPT << "k" * 4000 } # KEEP_LINE
    2000.times { Fiddle.malloc(4000) } # LEAK_LINE
    puts "done"
  when "exit"
    break
  end
end
