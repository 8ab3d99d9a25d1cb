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

  # base: the mount point, HTML-escaped, without a trailing slash.
  def index(base)
    live = Mwrap.total_bytes_allocated - Mwrap.total_bytes_freed
    "<table><tr><th>tracked bytes allocated</th><td>#{Mwrap.total_bytes_allocated}</td></tr>" \
      "<tr><th>tracked bytes freed</th><td>#{Mwrap.total_bytes_freed}</td></tr>" \
      "<tr><th>tracked live bytes</th><td id=\"live\">#{live}</td></tr>" \
      "<tr><th>RSS bytes</th><td id=\"rss\">#{rss_bytes}</td></tr></table>" \
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
    html = +"<p>Current generation: #{GC.count}</p><table id=\"sites\"><tr>"
    COLUMNS.each do |c|
      mark = c == sort ? " class=\"sorted\"" : ""
      html << "<th#{mark}><a href=\"#{base}/each/#{min}?sort=#{c}\">#{c}</a></th>"
    end
    html << "</tr>"
    sites.each do |s|
      loc = s[:location]
      html << "<tr><td>#{s[:total]}</td><td>#{s[:allocations]}</td><td>#{s[:frees]}</td>" \
              "<td>#{s[:live_bytes]}</td><td>#{format('%0.3f', mean_life(s))}</td>" \
              "<td>#{s[:max_lifespan]}</td><td class=\"loc\"><a href=\"#{base}/at/#{h(CGI.escape(loc))}\">" \
              "#{h(loc)}</a></td></tr>"
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
