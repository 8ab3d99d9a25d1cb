# SPDX-License-Identifier: MIT
# Attach-test target.  Prints "ready PID", then obeys one command per
# line on stdin, answering each:
#   leak N SIZE   keeps N strings of SIZE bytes (allocated on LEAK_LINE)
#   churn N       allocates and drops N strings
#   garbage N SIZE  allocates N strings of SIZE bytes and drops them at
#                 once (GARBAGE_LINE; garbage until the next full GC)
#   zlib          requires zlib and keeps a Deflate stream (ZLIB_LINE)
#   fork          forks a child that allocates, prints and exits 0
#   sleep S       sleeps S seconds, then says how long it took
#   objects N     keeps N plain objects (new Ruby heap pages)
#   pages         requires mwrap, prints "pages COUNT PAGE_SIZE"
#   api LOC       requires mwrap (now, after any attach) and prints
#                 "api TOTAL ALLOCATIONS LIVE_BLOCKS" of site LOC
# On EOF prints "bye CHECKSUM" and exits 0.
$stdout.sync = true
KEEP = []
LEAK_LINE = __LINE__ + 3
def leak(n, size)
  n.times do
    KEEP << ("L" * (size - 1))
  end
end
ZLIB_LINE = __LINE__ + 3
def zlib
  require "zlib"
  KEEP << Zlib::Deflate.new(Zlib::BEST_COMPRESSION, Zlib::MAX_WBITS, Zlib::MAX_MEM_LEVEL)
end
GARBAGE_LINE = __LINE__ + 2
def garbage(n, size)
  n.times { "G" * (size - 1) }
  nil
end
puts "ready #{Process.pid} leak_line=#{LEAK_LINE} zlib_line=#{ZLIB_LINE} garbage_line=#{GARBAGE_LINE}"
while (line = $stdin.gets)
  cmd, *args = line.split
  case cmd
  when "leak"
    leak(Integer(args[0]), Integer(args[1]))
    puts "leaked #{args[0]}"
  when "garbage"
    garbage(Integer(args[0]), Integer(args[1]))
    puts "garbage #{args[0]}"
  when "churn"
    Integer(args[0]).times { |i| "c#{i}" * 100 }
    puts "churned"
  when "zlib"
    zlib
    puts "zlib ok"
  when "fork"
    pid = fork do
      a = Array.new(1000) { |i| "child#{i}" * 50 }
      puts "child ok #{a.size}"
      exit!(0) # keep at_exit/exit dumps of the parent out of the child
    end
    _, st = Process.wait2(pid)
    puts "forked child exit=#{st.exitstatus}"
  when "objects"
    KEEP << Array.new(Integer(args[0])) { Object.new }
    puts "objects #{args[0]}"
  when "pages"
    require "mwrap"
    puts "pages #{Mwrap::HeapPageBody.each.count} #{Mwrap::HeapPageBody.stat[:page_size]}"
  when "api"
    require "mwrap"
    loc = Mwrap[args[0]]
    puts "api #{loc.total} #{loc.allocations} #{loc.each.count}"
  when "sleep"
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    sleep Float(args[0])
    puts format("slept %.2f", Process.clock_gettime(Process::CLOCK_MONOTONIC) - t)
  end
end
puts "bye #{KEEP.sum { |s| s.respond_to?(:bytesize) ? s.bytesize : 1 }}"
