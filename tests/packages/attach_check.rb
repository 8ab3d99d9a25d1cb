# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# attach_check.rb COMMAND... - runs COMMAND -p PID -d 3 (an installed
# mwrap-attach: "mwrap-attach", "bundle exec mwrap-attach") against
# tests/targets/leak.rb, which leaks strings on its line LEAK_LINE all
# through the window, and checks that the report names leak.rb:LEAK_LINE.
# Ruby, not pytest: the package roots have no Python.  Every wait is
# bounded; the target and the command are killed on the way out.
# Exit 0 when the report names the line, 1 when not.

DEADLINE = 120	# seconds for the whole check
LEAK = "leak 20 3000\n"	# 20 strings of 3000 bytes, every 0.1 s

def fail!(msg)
  warn "attach_check: #{msg}"
  exit 1
end

# A line from IO before the monotonic DEADLINE_AT, or nil.
def line_before(io, deadline_at)
  buf = +""
  loop do
    left = deadline_at - Process.clock_gettime(Process::CLOCK_MONOTONIC)
    return nil if left <= 0 || !IO.select([io], nil, nil, left)

    c = io.read_nonblock(1, exception: false)
    return nil if c.nil?
    next if c == :wait_readable

    buf << c
    return buf if c == "\n"
  end
end

def kill(pid)
  Process.kill(:KILL, pid)
rescue Errno::ESRCH
  nil
end

fail!("usage: attach_check.rb COMMAND...") if ARGV.empty?
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
deadline_at = started + DEADLINE
leak_rb = File.expand_path("../targets/leak.rb", __dir__)
to_target, target_in = IO.pipe
target_out, from_target = IO.pipe
target = Process.spawn(RbConfig.ruby, leak_rb, in: to_target, out: from_target)
to_target.close
from_target.close
report_r, report_w = IO.pipe
err_r, err_w = IO.pipe
attach = nil
begin
  ready = line_before(target_out, deadline_at) or fail!("leak.rb never said ready")
  m = ready.match(/\Aready (\d+) leak_line=(\d+)/) or fail!("leak.rb said #{ready.inspect}")
  pid, line = m.captures
  attach = Process.spawn(*ARGV, "-p", pid, "-d", "3", out: report_w, err: err_w)
  report_w.close
  err_w.close
  # the report and the transcript, read while the target leaks
  readers = [report_r, err_r].map { |io| Thread.new { io.read } }
  status = nil
  until status
    target_in.write(LEAK)
    line_before(target_out, deadline_at) or fail!("leak.rb stopped answering")
    _, status = Process.waitpid2(attach, Process::WNOHANG)
    break if status

    if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline_at
      kill(attach)
      fail!("#{ARGV.join(' ')} still running after #{DEADLINE} s")
    end
    sleep 0.1
  end
  attach = nil
  report, transcript = readers.map(&:value)
  unless status.success? && report.include?("leak.rb:#{line}")
    fail!("#{ARGV.join(' ')} -p #{pid} -d 3: #{status}; no leak.rb:#{line} in its report:\n" \
          "#{report.lines.first(30).join}#{transcript}")
  end
  at = report.lines.index { |l| l.include?("leak.rb:#{line}") } + 1
  puts "attach_check: #{ARGV.join(' ')} named leak.rb:#{line} (line #{at} of its report)"
ensure
  kill(attach) if attach
  target_in.close
  waited = nil
  20.times do
    break if (waited = Process.waitpid(target, Process::WNOHANG))

    sleep 0.1
  end
  unless waited
    kill(target)
    Process.waitpid(target)
  end
end
