# SPDX-License-Identifier: MIT
# tests/rails/sinatra_app under Puma:
#   puma -w 2 -t 4:4 -b tcp://127.0.0.1:PORT config.ru
require_relative "app"
run OrdersApp
