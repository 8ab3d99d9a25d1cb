# SPDX-License-Identifier: MIT
# Recursion through C frames (each level a block called by Array#each)
# until Ruby raises SystemStackError, N times in a fiber and N in a
# thread, a 1000-byte string allocated at every level: the deepest
# allocations are made where Ruby's machine stack is nearly gone.  Each
# level recurses from one of two lines, at random (the same draws every
# run: a JIT compiles what it saw), so that nearly every stack is new
# (its site made then, not found).
# Prints "ok RESCUED fibers MIN..MAX threads MIN..MAX" (their
# backtraces' sizes).
def down(depth)
  s = "y" * 1000
  r = 0
  if rand(2).zero?
    [depth].each { |d| r = down(d + 1) }
  else
    [depth].each { |d| r = down(d + 1) }
  end
  r + s.size
end

def overflow(depths)
  down(0)
rescue SystemStackError => e
  depths << e.backtrace.size
end

srand(1)
n = Integer(ARGV[0])
fibers = []
threads = []
n.times do
  Fiber.new { overflow(fibers) }.resume
  Thread.new { overflow(threads) }.join
end
puts "ok #{fibers.size + threads.size} fibers #{fibers.min}..#{fibers.max} " \
     "threads #{threads.min}..#{threads.max}"
