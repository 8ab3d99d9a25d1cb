# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# A dump as a speedscope file (https://www.speedscope.app/file-format-
# schema.json; speedscope opens it, and so do tools that read its
# format): two "sampled" profiles of live bytes (unit "bytes", each
# stack's weight its live bytes; its held bytes, and "held" in the
# names, where the dump has them: what the report ranks by), over the
# same stacks as the HTML
# report's flame graph (lib/mwrap_flame.rb: a stack_sample dump's stack
# records scaled to their line's exact bytes, and the lines without one):
#   "live bytes, rooted at the allocation": each stack from the line
#     holding the memory (a library line's application caller, as the
#     flame graph does) out to the outermost frame; speedscope's "Left
#     Heavy" view then draws the allocating lines on its top row;
#   "live bytes by stack, outermost frame first": the stacks as recorded.
# A dump without stacks gives one-frame stacks: the sites.
# A merged dump (MwrapReport.merge) adds one profile per source, rooted
# at the allocation, of that source's part of each stack.
# A frame is one line ("path:line in a, b": its methods' names listed),
# with its file and line; a native site is a frame of its own name.
require "json"
require_relative "mwrap_flame"
require_relative "mwrap_report"

module MwrapSpeedscope
  SCHEMA = "https://www.speedscope.app/file-format-schema.json"

  # The frames table: one per line, its names merged.
  class Frames
    attr_reader :list

    def initialize
      @index = {}
      @list = []
    end

    # The index of FRAME ("path:line in label" or a native site's name).
    def [](frame)
      path, line, label = MwrapReport.frame_parts(frame)
      key = line ? "#{path}:#{line}" : path
      i = @index[key] ||= (@list << { "name" => key, "labels" => [], "file" => (path if line), "line" => line }).size - 1
      @list[i]["labels"] |= [label] if label
      i
    end

    def to_a
      @list.map do |f|
        name = f["labels"].empty? ? f["name"] : "#{f['name']} in #{f['labels'].join(', ')}"
        { "name" => name, "file" => f["file"], "line" => f["line"] }.compact
      end
    end
  end

  # One sampled profile NAMED, of STACKS ([[frame index...] outermost
  # first, bytes]).
  def self.profile(name, stacks)
    { "type" => "sampled", "name" => name, "unit" => "bytes", "startValue" => 0,
      "endValue" => stacks.sum { |_, b| b },
      "samples" => stacks.map(&:first), "weights" => stacks.map(&:last) }
  end

  # DUMP as a speedscope file's JSON text; RECORDS: the stacks to write
  # (MwrapFlame.records, or the sites when it has none), FOCUS: which
  # frames are the application's (--focus), NAME: the file's name.
  def self.file(dump, records, focus: nil, name: nil)
    scope = MwrapReport.scope(dump, focus)
    frames = Frames.new
    alloc = []
    outer = []
    # what the report ranks by: held bytes where the dump has them
    held = MwrapReport.held?(dump)
    what = held ? "held" : "live"
    names = Array(dump.header["sources"]).map { |src| src["name"] }
    names = [] if names.size < 2
    by_source = names.to_h { |n| [n, []] }
    records.each do |s|
      live = held ? s[:held].to_i : (s[:live] || s[:total]).to_i # mwrap's three columns: totals stand in
      next unless live.positive?

      stack = MwrapReport.frames_of(s)
      # speedscope lists a sample's frames from its root to its leaf
      path = MwrapFlame.alloc_path(stack, scope).first.map { |f| frames[f] }
      alloc << [path, live]
      outer << [stack.reverse.map { |f| frames[f] }, live]
      s[:sources]&.each do |n, pt|
        b = pt[held ? :held : :live].to_i
        by_source[n] << [path, b] if b.positive? && by_source[n]
      end
    end
    pid = dump.header["pid"]
    per_source = by_source.map { |n, stacks| profile("#{what} bytes in #{n}, rooted at the allocation", stacks) }
    JSON.generate(
      "$schema" => SCHEMA, "exporter" => "mwrap-attach",
      "name" => name || "mwrap #{what} bytes#{", #{MwrapReport.title_of(dump)}" if pid}",
      "activeProfileIndex" => 0,
      "shared" => { "frames" => frames.to_a },
      "profiles" => [profile("#{what} bytes, rooted at the allocation", alloc),
                     profile("#{what} bytes by stack, outermost frame first", outer)] + per_source
    ) + "\n"
  end

  # The records a speedscope file of DUMP holds: its stacks as the flame
  # graph draws them, else its sites; SELECT: MwrapReport.select's
  # options (--min, --grep; no --top: a profile holds every stack).
  def self.records(dump, focus: nil, **select)
    recs = MwrapFlame.records(dump, focus: focus)
    recs = dump.sites if recs.empty?
    MwrapReport.select(recs, **select.merge(top: nil))
  end
end
