# SPDX-License-Identifier: MIT
# A plain Rack app for tests/rails/test_flame_puma.py (no Rails), run
# under Puma:
#   puma -t 4:4 -b tcp://127.0.0.1:PORT config.ru
require_relative "app"
run FlameApp
