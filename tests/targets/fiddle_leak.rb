# SPDX-License-Identifier: MIT
require 'fiddle'
ptrs = Array.new(100_000)
i = 0
while i < 100_000
  ptrs[i] = Fiddle.malloc(1024)
  i += 1
end
i = 0
while i < 50_000
  Fiddle.free(ptrs[i])
  i += 1
end
