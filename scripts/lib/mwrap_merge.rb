# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# mwrap-report --merge: dumps from many pods or hosts as one report.  A
# file is a source as a process of --children-of is one: the merge is
# MwrapReport.merge (sites, stacks and series summed, each record
# keeping each source's part), and the text report is the merged view
# then each source in a few lines (MwrapReport.summary), as
# mwrap-attach's for many processes.  This file says which files can be
# merged and what each source is called.
require_relative "mwrap_report"

module MwrapMerge
  # Why FILE (its TEXT, parsed as DUMP) cannot be merged, or nil.
  def self.refusal(file, text, dump)
    unless text.lstrip.start_with?("{")
      return "#{file}: an mwrap text dump (three columns: no frees, held bytes or stacks); " \
             "--merge reads JSON dumps: take them with --format=json, or MWRAP=dump_format:json"
    end
    return "#{file}: not a dump: it has no header record" if dump.header.empty?
    if dump.processes || dump.header["sources"]
      return "#{file}: a merged report, not a dump: merge the dumps it was made from"
    end

    nil
  end

  # The sources FILES are (read as DUMPS): each named by its file's name
  # (its path as given where two files share a name), with the pid and
  # host its header says.
  def self.sources(files, dumps)
    base = files.map { |f| File.basename(f) }
    files.zip(dumps, base).map do |f, d, b|
      { "name" => base.count(b) > 1 ? f : b, "file" => f, "pid" => d.header["pid"],
        "host" => d.header["host"] || d.header["hostname"] }.compact
    end
  end

  # "web-1.json (pid 4242, host web-1)"
  def self.label(source)
    more = [("pid #{source['pid']}" if source["pid"]), ("host #{source['host']}" if source["host"])].compact
    more.empty? ? source["name"] : "#{source['name']} (#{more.join(', ')})"
  end

  # The text report of MERGED (MwrapReport.merge of DUMPS): its title,
  # BODY (the merged view, rendered), then each source in a few lines.
  def self.text(merged, dumps, body)
    out = +"=== #{MwrapReport.title_of(merged)} ===\n"
    out << body
    merged.header["sources"].zip(dumps).each { |s, d| out << "\n=== source #{label(s)} ===\n" << MwrapReport.summary(d) }
    out
  end
end
