# SPDX-License-Identifier: MIT
# A Sinatra app for tests/rails/test_sinatra_puma.py (modular, so that
# requiring it starts no server of its own):
#   POST /orders?id=N  keeps the JSON of the order it builds in AUDIT,
#                      never trimmed: the leak
#   POST /quotes?id=N  renders the same kind of order as JSON and drops
#                      it: garbage made on the same innermost json line
#   GET /health        cheap
require "json"
require "sinatra/base"

class OrdersApp < Sinatra::Base
  AUDIT = []

  # About 2.5 KB of JSON, built anew for each request (from its id and a
  # per-process counter), so that both routes allocate through
  # json/common.rb and none reuses another's string.
  def self.order(id)
    @count = (@count || 0) + 1
    { id: id, seq: @count, items: Array.new(20) { |i| { sku: "sku-#{id}-#{i}", qty: i } },
      note: "n" * 2000 }
  end

  post "/orders" do
    order = OrdersApp.order(params["id"].to_i)
    AUDIT << JSON.generate(order)
    "ok\n"
  end

  post "/quotes" do
    order = OrdersApp.order(params["id"].to_i)
    content_type :json
    body JSON.generate(order)
  end

  get "/health" do
    "ok\n"
  end
end
