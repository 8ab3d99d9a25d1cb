# A Rails API app for tests/rails: one controller keeps the
# JSON of every order it sees (the leak) and renders the same payload
# (garbage made on the same innermost JSON line).  Run under Puma:
#   puma -w 2 -t 4:4 -b tcp://127.0.0.1:PORT config.ru
require "action_controller/railtie"
require "json"

class AuditApp < Rails::Application
  config.root = __dir__
  config.api_only = true
  config.eager_load = false
  config.logger = Logger.new(nil)
  config.log_level = :fatal
  config.secret_key_base = "0" * 64
  config.hosts.clear
  config.autoload_paths << File.join(__dir__, "app", "controllers")
  routes.append do
    post "/orders" => "orders#create"
    get "/health" => "orders#health"
  end
end

AuditApp.initialize!
run AuditApp
