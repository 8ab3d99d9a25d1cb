# SPDX-License-Identifier: MIT
# Seeds a migrated Redmine for tests/redmine (setup.sh runs it with
# `rails runner`): public projects, ISSUES issues with journals, the REST
# API on, and the admin's API key; prints what the load needs on one
# line: "seeded api_key=KEY issues=N first_issue=ID last_issue=ID
# projects=A,B,...".
ISSUES = 400
PROJECTS = %w[alpha beta gamma delta]

# Nothing leaves this process: mail jobs would run on a thread that
# `rails runner` does not wait for, and there is no mail server.
ActiveJob::Base.queue_adapter = :inline
ActionMailer::Base.perform_deliveries = false
Setting.notified_events = []
Setting.rest_api_enabled = "1"
Setting.login_required = "0"

admin = User.find_by!(login: "admin")
admin.update_columns(must_change_passwd: false)
User.current = admin
srand(41)   # the same database on every machine
words = %w[memory leak cache worker request journal puma thread heap
           string allocation garbage rails redmine sqlite json report]
text = ->(n) { Array.new(n) { words.sample }.join(" ") }

ActiveRecord::Base.transaction do
  projects = PROJECTS.map do |id|
    Project.create!(name: "Project #{id}", identifier: id, is_public: true,
                    description: text.call(40))
  end
  statuses = IssueStatus.sorted.to_a
  ISSUES.times do |i|
    project = projects[i % projects.size]
    issue = Issue.create!(project: project, tracker: project.trackers.first,
                          author: admin, subject: "#{text.call(6)} #{i}",
                          description: text.call(120),
                          priority: IssuePriority.default_or_middle)
    # a few journals each, with notes and attribute changes (details);
    # reloaded first, as create's callbacks leave its lock_version stale
    issue.reload
    (1 + i % 4).times do |j|
      issue.clear_journal   # a journal per save, not one growing journal
      issue.init_journal(admin, text.call(30 + 10 * j))
      issue.status = statuses[(i + j + 1) % statuses.size]
      issue.done_ratio = (10 * (i + j)) % 100
      issue.save!
    end
  end
end

issues = Issue.order(:id).pluck(:id)
puts "seeded api_key=#{admin.api_key} issues=#{issues.size} first_issue=#{issues.first} " \
     "last_issue=#{issues.last} projects=#{PROJECTS.join(',')}"
