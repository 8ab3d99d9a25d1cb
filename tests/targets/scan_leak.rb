# SPDX-License-Identifier: MIT
# Target for the pointer scan and the object view.  "go N" keeps N
# strings of 4,000 bytes (referenced from a global) and leaks N
# Fiddle.malloc blocks of 4,000 bytes (addresses dropped), then prints
# "done"; "ballast N" keeps N MB more in 1 MB strings (a scan long
# enough to report progress), then prints "done"; "map PATH" maps the
# file PATH private and writable, never reads it, and prints "mapped";
# "exit" ends it.
# "ready" names the two lines.
require "fiddle"
$stdout.sync = true
KEPT = []
KEEP_LINE = __LINE__ + 1
def keep(n) = n.times { KEPT << "k" * 4000 }
LEAK_LINE = __LINE__ + 1
def leak(n) = n.times { Fiddle.malloc(4000) }
puts "ready keep_line=#{KEEP_LINE} leak_line=#{LEAK_LINE}"
while (line = $stdin.gets)
  cmd, n = line.split
  case cmd
  when "go"
    keep(n.to_i)
    leak(n.to_i)
    puts "done"
  when "ballast"
    n.to_i.times { KEPT << "b" * 1_000_000 }
    puts "done"
  when "map"
    libc = Fiddle.dlopen(nil)
    mmap = Fiddle::Function.new(libc["mmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT,
                                               Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_LONG],
                                Fiddle::TYPE_VOIDP)
    File.open(n, "r+") do |f|
      # PROT_READ | PROT_WRITE, MAP_PRIVATE
      $mapped = mmap.call(nil, f.size, 3, 2, f.fileno, 0)
    end
    puts "mapped"
  when "exit"
    break
  end
end
puts "bye #{KEPT.count { |k| k.size == 4000 }}"
