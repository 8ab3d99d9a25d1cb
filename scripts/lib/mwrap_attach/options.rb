# SPDX-License-Identifier: MIT
# frozen_string_literal: true

module MwrapAttach
  # mwrap-attach's options, each declared once: its switches as
  # OptionParser takes them, what it sets in the options Hash, and what
  # each process's own run gets from it when many are attached at once
  # (--children-of, -p 1,2: lib/mwrap_attach/fleet.rb).
  #   switches  OptionParser's (a short one, then the long one)
  #   set       ->(o, value) { ... }: what it does to the options Hash
  #   fleet     ->(o, pid) { args }: the child's arguments for it (nil
  #             when not given); nil: the fleet's own (the report, the
  #             pids) or refused for several pids, never passed on
  #   help      its line in --help's option list (OPTIONS_HELP), where
  #             the usage's prose does not already say it
  Option = Struct.new(:switches, :set, :fleet, :help, keyword_init: true) do
    # The long switch's name: "--pid PID" -> "--pid".
    def name
      switches.last[/\A--[\w-]+/]
    end
  end

  OPTIONS = [
    Option.new(switches: ["-p", "--pid PID"], set: ->(o, v) { o[:pid] = v }),
    Option.new(switches: ["-d", "--duration SECONDS"],
               set: ->(o, v) { o[:seconds] = v; o[:seconds_given] = true },
               fleet: ->(o, _) { ["-d", o[:seconds].to_s] }),
    Option.new(switches: ["-o", "--output FILE"], set: ->(o, v) { o[:output] = v }),
    Option.new(switches: ["--force"], set: ->(o, _) { o[:force] = true }),
    Option.new(switches: ["--format FORMAT"], set: ->(o, v) { o[:format] = v }),
    Option.new(switches: ["--backend BACKEND"], set: ->(o, v) { o[:backend] = v },
               fleet: ->(o, _) { ["--backend", o[:backend]] }),
    Option.new(switches: ["--keep"], set: ->(o, _) { o[:keep] = true }),
    Option.new(switches: ["--sample BYTES"], set: ->(o, v) { o[:sample] = v },
               fleet: ->(o, _) { ["--sample", o[:sample]] if o[:sample] }),
    Option.new(switches: ["--gc"], set: ->(o, _) { o[:gc] = true },
               fleet: ->(o, _) { ["--gc"] if o[:gc] }),
    # without N: nil, the default (CLI.parse_args)
    Option.new(switches: ["--stacks[=N]"], set: ->(o, v) { o[:stacks] = v },
               fleet: ->(o, _) { ["--stacks=#{o[:stacks]}"] if o[:stacks] }),
    Option.new(switches: ["--no-stacks"], set: ->(o, _) { o[:stacks] = false },
               fleet: ->(o, _) { ["--no-stacks"] if o[:stacks] == false }),
    Option.new(switches: ["--group HOW"], set: ->(o, v) { o[:group] = v }),
    Option.new(switches: ["--focus PREFIX"], set: ->(o, v) { o[:focus] = v }),
    Option.new(switches: ["--objects"], set: ->(o, _) { o[:objects] = true },
               fleet: ->(o, _) { ["--objects"] if o[:objects] && !o[:dump_all] }),
    Option.new(switches: ["--dump-all FILE"], set: ->(o, v) { o[:objects] = true; o[:dump_all] = v },
               fleet: ->(o, pid) { ["--dump-all", "#{o[:dump_all]}.#{pid}"] if o[:dump_all] }),
    Option.new(switches: ["--scan"], set: ->(o, _) { o[:scan] = true },
               fleet: ->(o, _) { ["--scan"] if o[:scan] }),
    Option.new(switches: ["--watch"], set: ->(o, _) { o[:watch] = true }),
    Option.new(switches: ["--children-of PID"], set: ->(o, v) { o[:children_of] = v }),
    Option.new(switches: ["--dump"], set: ->(o, _) { o[:action] = :dump }),
    Option.new(switches: ["--stats"], set: ->(o, _) { o[:action] = :stats }),
    Option.new(switches: ["--detach"], set: ->(o, _) { o[:action] = :detach }),
    Option.new(switches: ["--check-gdb"], set: ->(o, _) { o[:action] = :check_gdb }),
    Option.new(switches: ["--timeout SECONDS"], set: ->(o, v) { o[:timeout] = v },
               fleet: ->(o, _) { ["--timeout", o[:timeout].to_s] }),
    Option.new(switches: ["--same-seccomp"], set: ->(o, _) { o[:same_seccomp] = true },
               fleet: ->(o, _) { ["--same-seccomp"] if o[:same_seccomp] }),
    Option.new(switches: ["-v", "--verbose"], set: ->(o, _) { o[:verbose] = true },
               fleet: ->(o, _) { ["-v"] if o[:verbose] }),
    # --every and its companions (every.rb): one pid only, refused for a
    # fleet
    Option.new(switches: ["--every SECONDS"], set: ->(o, v) { o[:every] = v },
               help: "a window of -d seconds every SECONDS, detached between windows"),
    Option.new(switches: ["--serve ADDR:PORT"], set: ->(o, v) { o[:serve] = v },
               help: "serve the latest window's profile at http://ADDR:PORT/debug/pprof/heap"),
    Option.new(switches: ["--push URL"], set: ->(o, v) { o[:push] = v },
               help: "POST each window's profile to Pyroscope's URL/ingest"),
    Option.new(switches: ["--label KEY=VALUE"], set: ->(o, v) { (o[:labels] ||= []) << v },
               help: "a label on every sample and in the pushed name (repeatable)"),
    Option.new(switches: ["--app NAME"], set: ->(o, v) { o[:app] = v },
               help: "the application's name for --push (default: the process's comm)"),
  ].freeze

  # The options that carry a help line, as --help lists them.
  def self.options_help
    rows = OPTIONS.select(&:help).map { |opt| [opt.switches.last, opt.help] }
    width = rows.map { |sw, _| sw.size }.max
    rows.map { |sw, text| format("  %-*s  %s", width, sw, text) }.join("\n")
  end

  # What a fleet's run for PID gets from the options O.
  def self.fleet_args(o, pid)
    OPTIONS.flat_map { |opt| (opt.fleet && opt.fleet.call(o, pid)) || [] }
  end
end
