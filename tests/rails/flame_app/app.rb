# SPDX-License-Identifier: MIT
# A service whose leak is one gem-like helper (tests/targets/gemlike/
# helper.rb, GemLike.remember) called from two routes' lines:
#   GET /upload?size=N   keeps N bytes through the helper (its own line)
#   GET /ping?size=N     keeps N bytes through the helper (another line)
#   GET /count           the number of strings the helper keeps
#   GET /health          "ok"
require_relative "../../targets/gemlike/helper"

module FlameApp
  TEXT = { "content-type" => "text/plain" }.freeze

  def self.call(env)
    size = env["QUERY_STRING"][/\Asize=(\d+)\z/, 1].to_i
    case env["PATH_INFO"]
    when "/upload" then upload(size)
    when "/ping" then ping(size)
    when "/count" then return [200, TEXT, [GemLike::STORE.size.to_s]]
    when "/health" then nil
    else return [404, TEXT, ["no such route\n"]]
    end
    [200, TEXT, ["ok\n"]]
  end

  def self.upload(size)
    GemLike.remember(size) # the upload's line
  end

  def self.ping(size)
    GemLike.remember(size) # the ping's line
  end
end
