# SPDX-License-Identifier: MIT
# The leak tests/redmine makes mwrap-attach find: the JSON of every issue
# shown, kept by URL; and, beside it, a bounded cache that must rank
# below it.  Both strings come from JSON.generate, as Redmine's own API
# rendering's garbage does: only their caller, a line here, tells them
# apart.
module MwrapLeak
  # Every issue shown (HTML or API), as JSON, by URL.  Never evicted, and
  # the load's `_=` parameter never repeats: it only grows.
  SHOWN = {}
  # With MWRAP_REDMINE_BOUNDED=N: a summary of each of the last N
  # requests, by URL; full within seconds of load, then level.
  RECENT = {}
  RECENT_MAX = ENV.fetch("MWRAP_REDMINE_BOUNDED", "0").to_i
  # in each summary, for what a real one would say: it makes an entry
  # about the size of an issue's JSON in SHOWN (2.2 KB) without making
  # garbage of its own (the response's body would: a copy per call)
  NOTE = ("request summary " * 125).freeze
  # RECENT's insert-then-evict, against Puma's other threads
  LOCK = Mutex.new

  def self.issue_data(issue)
    { "issue" => issue.attributes,
      "journals" => issue.journals.map do |j|
        { "id" => j.id, "user" => j.user_id, "notes" => j.notes,
          "created_on" => j.created_on }
      end }
  end

  # IssuesController#show (HTML and .json): keeps the issue's JSON
  module KeepShown
    def self.included(base)
      base.after_action :mwrap_keep_shown, only: :show
    end

    private

    def mwrap_keep_shown
      data = MwrapLeak.issue_data(@issue)
      SHOWN[request.url] = JSON.generate(data)   # the leak
    end
  end

  # Every action: a summary of it, the last RECENT_MAX kept
  module KeepRecent
    def self.included(base)
      base.after_action :mwrap_keep_recent
    end

    private

    def mwrap_keep_recent
      summary = { "url" => request.url, "action" => action_name,
                  "status" => response.status, "note" => NOTE }
      LOCK.synchronize do
        RECENT[request.url] = JSON.generate(summary)   # the bounded cache
        RECENT.shift while RECENT.size > RECENT_MAX
      end
    end
  end
end
