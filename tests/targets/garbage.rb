# --gc test target.  Prints "ready PID leak_line=N garbage_line=M", then
# obeys one command per line on stdin, answering each:
#   leak N SIZE      keeps N strings of SIZE bytes (allocated on LEAK_LINE)
#   garbage N SIZE   allocates N strings of SIZE bytes on GARBAGE_LINE and
#                    drops them at once (garbage until the next full GC)
# SIZE is well past Ruby's embedded-string limit: each string's bytes
# are one malloc'd block.  On EOF prints "bye" and exits 0.
$stdout.sync = true
KEEP = []
LEAK_LINE = __LINE__ + 2
def leak(n, size)
  n.times { KEEP << ("L" * (size - 1)) }
end
GARBAGE_LINE = __LINE__ + 2
def garbage(n, size)
  n.times { "G" * (size - 1) }
  nil
end
puts "ready #{Process.pid} leak_line=#{LEAK_LINE} garbage_line=#{GARBAGE_LINE}"
while (line = $stdin.gets)
  cmd, *args = line.split
  case cmd
  when "leak"
    leak(Integer(args[0]), Integer(args[1]))
    puts "leaked #{args[0]}"
  when "garbage"
    garbage(Integer(args[0]), Integer(args[1]))
    puts "garbage #{args[0]}"
  end
end
puts "bye"
