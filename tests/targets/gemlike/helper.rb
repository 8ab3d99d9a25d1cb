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

  # remember, DEPTH Ruby frames below its caller (with this method's
  # DEPTH - 1), as a framework's own call chain puts an allocation
  # (ActiveRecord's query path: some 27 frames).
  def self.remember_deep(size, depth)
    depth > 1 ? remember_deep(size, depth - 1) : remember(size)
  end
end
