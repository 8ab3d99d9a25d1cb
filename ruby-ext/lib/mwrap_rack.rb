# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# MwrapRack: a Rack app showing what libmwrap.so records in this process.
#
#   map("/MWRAP") { run(MwrapRack.new) }
#
#   /                    totals: tracked live bytes against RSS
#   /each/MIN?sort=COL   sites with total > MIN bytes, by live bytes or
#                        by total, allocations, frees, mean_life, max_life
#   /at/LOCATION         live blocks of one site (size, generation)
#   /heap_pages          Ruby heap pages: statistics and addresses
#   POST /reset          starts a window: the counters zeroed, so the
#                        sites rank by what they made and kept since (a
#                        leak above what the process made at start-up),
#                        each with its growth per second
#
# Pages are generated inside Mwrap.quiet, so viewing them records nothing.
# Links are absolute under the mount (SCRIPT_NAME): a relative "each/2000"
# seen at /MWRAP (no trailing slash) would resolve to /each/2000.
require "cgi"
require "mwrap"

class MwrapRack
  COLUMNS = %w[total allocations frees live mean_life max_life location].freeze
  HEADERS = { "content-type" => "text/html; charset=utf-8",
              "cache-control" => "no-cache, max-age=0, must-revalidate" }.freeze

  def call(env)
    base = h(env["SCRIPT_NAME"].to_s.chomp("/"))
    Mwrap.quiet do
      case env["PATH_INFO"].to_s
      when "/reset" then reset(env, base)
      when "", "/" then page("mwrap", index(base))
      when %r{\A/each/(\d+)\z}
        page("Mwrap.each(#{$1})", each_table(base, $1.to_i, sort_key(env)))
      when %r{\A/at/(.+)\z} then at(CGI.unescape($1))
      when "/heap_pages" then page("heap pages", heap_pages)
      else [404, { "content-type" => "text/plain" }, ["Not found\n"]]
      end
    end
  end

  private

  def h(text)
    CGI.escapeHTML(text.to_s)
  end

  def page(title, body)
    html = +"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>#{h(title)}</title>"
    html << "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}" \
            "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}" \
            "td.loc{text-align:left;font-family:monospace}th a{text-decoration:none}" \
            "th.sorted{background:#e8eef7}</style>"
    html << "</head><body><h1>#{h(title)}</h1>#{body}</body></html>\n"
    [200, HEADERS.dup, [html]]
  end

  def rss_bytes
    File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i * 1024
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # POST: a new window (Mwrap.reset), then its sites; any other method
  # changes nothing.
  def reset(env, base)
    return [405, { "content-type" => "text/plain", "allow" => "POST" }, ["POST to reset\n"]] unless
      env["REQUEST_METHOD"] == "POST"

    Mwrap.reset
    @since = now
    [303, { "location" => "#{CGI.unescapeHTML(base)}/each/0" }, []]
  end

  # Seconds since the window began (the last reset here), or nil: then
  # the figures run since tracking began (the process's start under
  # mwrap), start-up included.
  def window_seconds
    @since && [now - @since, 0.001].max
  end

  # What the figures cover, and the button that starts a window.
  def window_html(base)
    secs = window_seconds
    what = if secs
             format("since this page's last reset, %.1f s ago: what the sites made and kept in this " \
                    "window, growth first", secs)
           else
             "since tracking began (start-up included): reset to rank what grows from now on"
           end
    "<p id=\"window\">#{h(what)}</p><form method=\"post\" action=\"#{base}/reset\">" \
      "<button type=\"submit\">reset: start a window</button></form>"
  end

  # base: the mount point, HTML-escaped, without a trailing slash.
  def index(base)
    live = Mwrap.total_bytes_allocated - Mwrap.total_bytes_freed
    "<table><tr><th>tracked bytes allocated</th><td>#{Mwrap.total_bytes_allocated}</td></tr>" \
      "<tr><th>tracked bytes freed</th><td>#{Mwrap.total_bytes_freed}</td></tr>" \
      "<tr><th>tracked live bytes</th><td id=\"live\">#{live}</td></tr>" \
      "<tr><th>RSS bytes</th><td id=\"rss\">#{rss_bytes}</td></tr></table>#{window_html(base)}" \
      "<p><a href=\"#{base}/each/2000\">sites with more than 2000 bytes allocated</a> &middot; " \
      "<a href=\"#{base}/each/0\">all sites</a> &middot; " \
      "<a href=\"#{base}/heap_pages\">heap pages</a></p>"
  end

  def sort_key(env)
    key = CGI.parse(env["QUERY_STRING"].to_s).fetch("sort", ["live"]).first
    COLUMNS.include?(key) ? key : "live"
  end

  def mean_life(site)
    site[:frees].zero? ? Float::INFINITY : site[:age_total].to_f / site[:frees]
  end

  def value(site, col)
    case col
    when "live" then site[:live_bytes]
    when "mean_life" then mean_life(site)
    when "max_life" then site[:max_lifespan]
    when "location" then site[:location]
    else site[col.to_sym]
    end
  end

  def each_table(base, min, sort)
    sites = Mwrap.sites(min).sort_by { |s| value(s, sort) }
    sites.reverse! unless sort == "location"
    secs = window_seconds
    html = +"#{window_html(base)}<p>Current generation: #{GC.count}</p><table id=\"sites\"><tr>"
    COLUMNS.each do |c|
      mark = c == sort ? " class=\"sorted\"" : ""
      html << "<th#{mark}><a href=\"#{base}/each/#{min}?sort=#{c}\">#{c}</a></th>"
    end
    html << "<th>growth/s</th>" if secs
    html << "</tr>"
    sites.each do |s|
      loc = s[:location]
      html << "<tr><td>#{s[:total]}</td><td>#{s[:allocations]}</td><td>#{s[:frees]}</td>" \
              "<td>#{s[:live_bytes]}</td><td>#{format('%0.3f', mean_life(s))}</td>" \
              "<td>#{s[:max_lifespan]}</td><td class=\"loc\"><a href=\"#{base}/at/#{h(CGI.escape(loc))}\">" \
              "#{h(loc)}</a></td>"
      html << "<td>#{(s[:live_bytes] / secs).round}</td>" if secs
      html << "</tr>"
    end
    html << "</table>"
  end

  def at(location)
    loc = Mwrap[location]
    return [404, { "content-type" => "text/plain" }, ["Not found\n"]] unless loc

    rows = loc.each.map { |size, gen| "<tr><td>#{size}</td><td>#{gen}</td></tr>" }
    page("live allocations at #{location}",
         "<p>total #{loc.total}, allocations #{loc.allocations}, frees #{loc.frees}</p>" \
         "<table id=\"live\"><tr><th>size</th><th>generation</th></tr>#{rows.join}</table>")
  end

  def heap_pages
    stat = Mwrap::HeapPageBody.stat
    gc = GC.stat.slice(:count, :heap_allocated_pages, :heap_eden_pages, :heap_tomb_pages,
                       :total_allocated_pages, :total_freed_pages)
    html = +"<table id=\"stat\"><tr><th>stat</th><th>value</th></tr>"
    stat.merge(gc).each { |k, v| html << "<tr><td class=\"loc\">#{h(k)}</td><td>#{h(v)}</td></tr>" }
    html << "</table><p>Non-Infinity lifespans can indicate fragmentation.</p>"
    html << "<table id=\"pages\"><tr><th>address</th><th>generation</th></tr>"
    Mwrap::HeapPageBody.each { |addr, gen| html << "<tr><td>0x#{addr.to_s(16)}</td><td>#{gen}</td></tr>" }
    html << "</table>"
  end
end
