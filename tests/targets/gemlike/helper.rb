# SPDX-License-Identifier: MIT
# A gem-like helper for tests/targets/stacks_app.rb: one line allocates
# (and keeps) for every caller, so its innermost line alone says nothing
# of who leaks.
module GemLike
  STORE = []
  KEEP_LINE = __LINE__ + 3
  # Keeps a string whose heap buffer is SIZE bytes (with its NUL).
  def self.remember(size)
    STORE << ("g" * (size - 1))
  end

  # remember, DEPTH Ruby frames below its caller (DEPTH - 1 of this
  # method's, then remember's), as a framework's own call chain puts an
  # allocation (ActiveRecord's query path: some 27 frames).
  def self.remember_deep(size, depth)
    depth > 2 ? remember_deep(size, depth - 1) : remember(size)
  end
end
