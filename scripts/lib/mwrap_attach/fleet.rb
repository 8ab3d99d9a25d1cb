# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require "rbconfig"
require "tmpdir"
require_relative "failure"
require_relative "options"
require_relative "output"
require_relative "proc_stat"
require_relative "../mwrap_report"

module MwrapAttach
  # Many processes at once (-p 1,2 or --children-of MASTER): one
  # mwrap-attach run per pid (each with our options, writing its dump as
  # recorded), then one report: the merged view, grouped and focused as
  # for one process (stacks, callers and growth kept), then a section per
  # process.
  module Fleet
    extend Fails

    # SCRIPT is mwrap-attach itself, run once per pid; returns our exit
    # code.
    def self.run(o, script)
      fail!(EXIT[:usage], "--watch takes one pid") if o[:watch]
      pids = o[:children_of] ? children_of(o[:children_of]) : o[:pids]
      pids.each { |pid| fail!(EXIT[:usage], "refusing to attach to myself") if pid == Process.pid }
      results = Dir.mktmpdir("mwrap-attach") { |dir| attach_each(pids, o, dir, script) }
      good = results.select { |_, dump, _, _| dump }
      results.each do |pid, dump, code, last|
        warn "mwrap-attach: process #{pid}: no report (exit #{code}: #{last.sub(/\Amwrap-attach: /, '')})" unless dump
      end
      return results.first[2] if good.empty?

      merged = MwrapReport.merge(good.map { |_, dump, _, _| dump })
      merged.header["seconds"] = good.map { |_, d, _, _| d.header["seconds"].to_f }.max
      if o[:format] == "text"
        # the whole cluster first: load may all land on one worker
        text = +"=== merged view of #{good.size} of #{pids.size} processes ===\n"
        text << Output.render(merged, merged.header["seconds"], "text")
        # then each process in a few lines; -v: its whole report
        good.each do |pid, dump, _, _|
          text << "\n=== process #{pid} ===\n"
          text << (o[:verbose] ? Output.render(dump, dump.header["seconds"]&.to_f, "text") : MwrapReport.summary(dump))
        end
        Output.emit(text, o[:output])
      else
        # JSON: each process's table after the merged one
        merged.processes = good.map { |_, dump, _, _| MwrapReport.process_record(dump) } if o[:format] == "json"
        Output.emit(Output.render(merged, merged.header["seconds"], o[:format]), o[:output])
      end
      EXIT[:ok]
    end

    def self.children_of(master)
      fail!(EXIT[:no_such_process], "no such process: #{master}") unless File.exist?("/proc/#{master}")
      kids = Dir.glob("/proc/[0-9]*").filter_map do |d|
        pid = File.basename(d).to_i
        pid if ProcStat.fields(pid)&.at(1).to_i == master
      end
      fail!(EXIT[:no_such_process], "process #{master} has no child processes",
            "give the workers' pids with -p PID1,PID2") if kids.empty?
      kids.sort
    end


    # Attaches to every pid at once, each through its own mwrap-attach run
    # (its own checks, window and exit code); their messages are prefixed
    # with the pid.  Returns [[pid, dump or nil, exit code, last message]].
    def self.attach_each(pids, o, dir, script)
      runs = pids.map do |pid|
        out = File.join(dir, "#{pid}.json")
        cmd = [RbConfig.ruby, script, "-p", pid.to_s, "--format=raw", "-o", out, *MwrapAttach.fleet_args(o, pid)]
        rd, wr = IO.pipe
        child = Process.spawn(*cmd, err: wr, out: File::NULL)
        wr.close
        last = +""
        reader = Thread.new do
          rd.each_line do |l|
            next if l.strip == "mwrap-attach: wrote #{out}" # our scratch file

            last.replace(l.strip)
            warn "[#{pid}] #{l.strip}"
          end
        end
        { pid: pid, child: child, out: out, reader: reader, last: last }
      end
      forward = ->(sig) { runs.each { |r| Process.kill(sig, r[:child]) rescue nil } }
      old_int = trap("INT") { forward.call("INT") }
      old_term = trap("TERM") { forward.call("TERM") }
      results = runs.map do |r|
        _, status = Process.wait2(r[:child])
        r[:reader].join
        # a process that exited mid-window has its report too
        made = status.success? || status.exitstatus == EXIT[:exited]
        dump = MwrapReport.parse(File.read(r[:out]), r[:out]) if made && File.size?(r[:out])
        next [r[:pid], dump, status.exitstatus, r[:last]] if status.exited?

        [r[:pid], dump, EXIT[:internal], "its mwrap-attach died of signal #{status.termsig}"]
      end
      trap("INT", old_int)
      trap("TERM", old_term)
      results
    end

    private_class_method :children_of, :attach_each
  end
end
