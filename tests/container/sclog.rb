# SPDX-License-Identifier: MIT
# A Ruby target whose main thread (and the threads it starts, such as an
# attach's helper) runs under libsclog.so's syscall logger.  Prints
# "ready leak_line=N", then one answer per command on stdin:
#   leak N SIZE   keeps N strings of SIZE bytes (allocated on LEAK_LINE)
#   report        "main NR..." and "others NR...": syscalls since the last
$stdout.sync = true
require "fiddle"
lib = Fiddle.dlopen(ARGV.fetch(0))
start = Fiddle::Function.new(lib["sclog_start"], [], Fiddle::TYPE_INT)
REPORT = Fiddle::Function.new(lib["sclog_report"],
                              [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_INT],
                              Fiddle::TYPE_INT)
KEEP = []
LEAK_LINE = __LINE__ + 3
def leak(n, size)
  n.times do
    KEEP << ("L" * (size - 1))
  end
end

def report(main)
  buf = "\0" * 4096
  n = REPORT.call(buf, buf.bytesize, main ? 1 : 0)
  buf[0, n].split.map(&:to_i)
end
abort "sclog_start failed" unless start.call.zero?
puts "ready leak_line=#{LEAK_LINE}"
loop do
  line = begin
    $stdin.gets
  rescue Errno::EINTR, Errno::ENOSYS
    # a ptrace stop while the logger holds our read: not an end
    next
  end
  break unless line

  cmd, *args = line.split
  case cmd
  when "leak"
    leak(Integer(args[0]), Integer(args[1]))
    puts "leaked #{args[0]}"
  when "report"
    puts "main #{report(true).join(' ')}"
    puts "others #{report(false).join(' ')}"
  else
    puts "got #{line.strip}"
  end
end
puts "bye"
