# SPDX-License-Identifier: MIT
# A gem-like helper for tests/targets/stacks_app.rb: one line allocates
# (and keeps) for every caller, so its innermost line alone says nothing
# of who leaks.
module GemLike
  STORE = []
  KEEP_LINE = __LINE__ + 6
  # Keeps a string whose heap buffer is SIZE bytes (with its NUL), DEPTH
  # Ruby frames below its caller, as a framework's own call chain puts
  # them (ActiveRecord's query path: some 27 frames).
  def self.remember(size, depth = 1)
    return remember(size, depth - 1) if depth > 1
    STORE << ("g" * (size - 1))
  end
end
