# SPDX-License-Identifier: MIT
# Recursion through C frames (each level a block called by Array#each)
# until Ruby raises SystemStackError, N times in a fiber and N in a
# thread, a 1000-byte string allocated at every level: the deepest
# allocations are made where Ruby's machine stack is nearly gone.  Each
# level recurses from one of two lines, at random, so that nearly every
# stack is new (its site made then, not found).
# Prints "ok RESCUED MIN..MAX" (their backtraces' sizes).
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

n = Integer(ARGV[0])
depths = []
n.times do
  Fiber.new { overflow(depths) }.resume
  Thread.new { overflow(depths) }.join
end
puts "ok #{depths.size} #{depths.min}..#{depths.max}"
