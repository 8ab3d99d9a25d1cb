# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "failure"
require_relative "../mwrap_report"
require_relative "../mwrap_pprof"
require_relative "../mwrap_html"
require_relative "../mwrap_speedscope"

module MwrapAttach
  # The report, rendered by lib/mwrap_report.rb (as mwrap-report does)
  # and written to stdout or -o FILE.
  module Output
    extend Fails

    class << self
      # --force: -o may overwrite an existing file (set by the command
      # line, before any report is written).
      attr_accessor :force
      # --group and --focus: how sites are grouped in the report
      # ({ group: "line"|"stack"|"file", focus: PREFIX or nil }).
      attr_accessor :view
    end

    # Fails now, before touching any process, if FILE cannot be written
    # (root's access checks say yes to /proc and to read-only mounts), or
    # is an existing regular file and FORCE is not given.
    def self.check_writable(file, force: true)
      dir = File.dirname(File.expand_path(file))
      fail!(EXIT[:usage], "cannot write #{file}: no such directory") unless File.directory?(dir)
      if File.file?(file) && !force
        fail!(EXIT[:usage], "#{file} exists; not overwriting it", "add --force to overwrite it, or name another file")
      end
      existed = File.exist?(file)
      File.open(file, "a") {}
      File.unlink(file) unless existed
    rescue SystemCallError => e
      fail!(EXIT[:usage], "cannot write #{file}: #{strerror(e)}")
    end

    # TEXT to FILE ("mwrap-attach: wrote FILE" on stderr), or to stdout
    # when FILE is nil.  When FILE cannot be written the report goes to
    # stdout instead, and the failure (exit code io) says why; a file we
    # created is not left half written.  Without --force a regular file
    # that appeared since the check is not overwritten.
    def self.emit(text, file)
      return to_stdout(text) unless file

      created = false
      begin
        fresh = !File.exist?(file)
        flags = File::WRONLY | File::CREAT | File::TRUNC | File::BINARY
        flags |= File::EXCL if fresh || (File.file?(file) && !force)
        File.open(file, flags, 0o666) do |f|
          created = fresh
          f.write(text)
        end
      rescue SystemCallError, IOError => e
        File.unlink(file) if created rescue nil
        why = e.is_a?(Errno::EEXIST) ? "it appeared during the window (add --force to overwrite it)" : strerror(e)
        to_stdout(text)
        fail!(EXIT[:io], "cannot write #{file}: #{why}", "the report is on stdout instead")
      end
      warn "mwrap-attach: wrote #{file}"
    end

    def self.to_stdout(text)
      $stdout.write(text)
      $stdout.flush
    rescue SystemCallError, IOError => e
      fail!(EXIT[:io], "cannot write the report to stdout: #{strerror(e)}", "write it to a file with -o FILE")
    end

    # The system's message for E, without Ruby's " @ function - path".
    def self.strerror(e)
      e.is_a?(SystemCallError) ? SystemCallError.new(nil, e.errno).message : e.message
    end

    # DUMP's sites ranked by live bytes, in FORMAT (text, json, pprof,
    # html, speedscope, or raw: the dump as recorded); WINDOW is the
    # window's length in seconds.
    # Sites are grouped as --group and --focus say (Output.view); pprof
    # and speedscope keep every stack as it was recorded.
    def self.render(dump, window, format)
      v = view || {}
      group = v[:group] || "line"
      if format == "pprof"
        return MwrapPprof.profile(dump, MwrapReport.select(MwrapReport.pprof_sites(dump, focus: v[:focus]),
                                                           sort: MwrapReport.default_sort(dump)))
      end
      return MwrapReport.raw_json(dump) if format == "raw"
      if format == "speedscope"
        return MwrapSpeedscope.file(dump, MwrapSpeedscope.records(dump, focus: v[:focus]), focus: v[:focus])
      end

      sort = MwrapReport.default_sort(dump)
      sites = MwrapReport.view(dump, group: group, focus: v[:focus], sort: sort)
      return MwrapReport.json(dump, sites, stacks: dump.stacks || []) if format == "json"
      return MwrapHtml.page(dump, sites, window: window, focus: v[:focus]) if format == "html"

      by = group == "line" && !v[:focus] ? " (innermost line)" : " (by #{MwrapReport.group_words(group, v[:focus])})"
      MwrapReport.text(dump, sites, window: window, apps: group == "line", focus: v[:focus],
                                    title: "sites#{by}, ranked by #{sort == 'held' ? 'held' : 'live'} bytes grown during the window:")
    end
  end
end
