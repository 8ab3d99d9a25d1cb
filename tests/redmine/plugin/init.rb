# SPDX-License-Identifier: MIT
# tests/redmine's plugin: copied into Redmine's plugins directory for a
# test run only (tests/redmine/server.py), so that its lines are the
# application's, as a real plugin's are.
Redmine::Plugin.register :mwrap_leak do
  name "mwrap-attach leak"
  author "mwrap-attach tests"
  description "Keeps the JSON of every issue shown (a leak, on purpose)"
  version "1.0"
end

IssuesController.include MwrapLeak::KeepShown
ApplicationController.include MwrapLeak::KeepRecent if MwrapLeak::RECENT_MAX > 0
