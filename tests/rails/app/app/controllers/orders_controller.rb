# SPDX-License-Identifier: MIT
# Keeps the JSON of every order for an audit trail it never trims: the
# leak.  The response renders the same payload, whose JSON is garbage
# made on the same line of the json library.
class OrdersController < ActionController::API
  AUDIT = []

  def create
    order = { id: params[:id].to_i, items: Array.new(20) { |i| { sku: "sku-#{i}", qty: i } },
              note: "n" * 400 }
    AUDIT << JSON.generate(order)
    render json: order
  end

  def health
    render json: { audit: AUDIT.size, pid: Process.pid }
  end
end
