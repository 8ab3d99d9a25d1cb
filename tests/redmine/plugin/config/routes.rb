# SPDX-License-Identifier: MIT
# GET /health: the plugin is loaded (tests/rails/server.py's puma_serving
# waits for it), and what its two caches hold in the worker answering.
get "health", to: proc {
  # values: one C call, so no request thread adds a key mid-iteration
  shown, recent = MwrapLeak::SHOWN.values, MwrapLeak::RECENT.values
  text = "ok shown=#{shown.size} shown_bytes=#{shown.sum(&:bytesize)} " \
         "recent=#{recent.size} recent_bytes=#{recent.sum(&:bytesize)}\n"
  [200, { "Content-Type" => "text/plain" }, [text]]
}
