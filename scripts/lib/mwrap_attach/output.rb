# frozen_string_literal: true

require_relative "failure"
require_relative "../mwrap_report"
require_relative "../mwrap_pprof"
require_relative "../mwrap_html"

module MwrapAttach
  # The report, rendered by lib/mwrap_report.rb (as mwrap-report does)
  # and written to stdout or -o FILE.
  module Output
    extend Fails

    # Fails now, before touching any process, if FILE cannot be written
    # (root's access checks say yes to /proc and to read-only mounts).
    def self.check_writable(file)
      dir = File.dirname(File.expand_path(file))
      fail!(EXIT[:usage], "cannot write #{file}: no such directory") unless File.directory?(dir)
      existed = File.exist?(file)
      File.open(file, "a") {}
      File.unlink(file) unless existed
    rescue SystemCallError => e
      fail!(EXIT[:usage], "cannot write #{file}: #{e.message.sub(/ @ .*/, '').downcase}")
    end

    # TEXT to FILE, or to stdout when FILE is nil.
    def self.emit(text, file)
      if file
        File.binwrite(file, text)
      else
        $stdout.write(text)
      end
    rescue SystemCallError => e
      fail!(EXIT[:usage], "cannot write #{file}: #{e.message}")
    end

    # DUMP's sites ranked by live bytes, in FORMAT (text, json, pprof or
    # html); WINDOW is the window's length in seconds.
    def self.render(dump, window, format)
      sites = MwrapReport.select(dump.sites, sort: "live")
      return MwrapReport.json(dump, sites) if format == "json"
      return MwrapPprof.profile(dump, sites) if format == "pprof"
      return MwrapHtml.page(dump, sites, window: window) if format == "html"

      title = "sites ranked by live bytes grown during the window:"
      gc = gc_line(dump.header)
      MwrapReport.text(dump, sites, window: window, title: gc ? "#{gc}\n#{title}" : title)
    end

    # What --gc did, from the header fields ControlClient#run_gc set; nil
    # without --gc.
    def self.gc_line(h)
      case h["gc"]
      when "ran"
        format("full GC (GC.start) run at a Ruby safe point before this dump, in %.1f ms: " \
               "tracked live %s before, %s after",
               h["gc_ms"].to_f, MwrapReport.human(h["gc_live_before_bytes"].to_i),
               MwrapReport.human(h["gc_live_after_bytes"].to_i))
      when "not run"
        "no GC before this dump (--gc: #{h['gc_error']})"
      end
    end
  end
end
