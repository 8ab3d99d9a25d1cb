# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# Live bytes by stack as trees, for the HTML report's flame graph and the
# speedscope writer.  Two views of the same stacks:
#   alloc  rooted at the allocation: each root is the line that holds
#          the memory (the report's row for it), its children who called
#          it, and so on toward the outer frames.  A line of library code
#          (MwrapReport::Scope#app?) is rooted at its application caller,
#          the one the report names under it ("called from"), and the
#          library lines it allocated in are kept as that root's :via;
#          a stack with no application frame keeps its own innermost line.
#   outer  the outermost frame first (the older icicle view).
# Frames are keyed by their path:line (MwrapReport.frame_location): one
# line is one box whatever its method's name (frames next to each other
# on one line, a block and the method calling it, too); the names are
# listed.
require_relative "mwrap_report"

module MwrapFlame
  # A node: the frame's location, its method names, its live bytes, its
  # children by location, whether it is library code, and (alloc roots of
  # library lines) the library lines under it with their bytes.
  Node = Struct.new(:location, :labels, :bytes, :kids, :library, :via) do
    def child(location)
      kids[location] ||= Node.new(location, [], 0, {}, false, nil)
    end
  end

  # The records whose stacks the graph draws: DUMP's sites as a --group=
  # stack view sees them (a stack_sample dump's stack records, with the
  # lines they do not cover; a line without a stack is one frame), only
  # those with live bytes.  Empty when no record has a stack.
  def self.records(dump, focus: nil)
    recs = MwrapReport.view_sites(dump, "stack", focus)
    return [] unless recs.any? { |s| s[:stack] && !s[:stack].empty? }

    recs = exact(dump, recs) if dump.stacks&.any?
    recs.select { |s| s[:live].to_i.positive? }
  end

  # RECS with each line's stack records scaled to the line's exact live
  # and held bytes (DUMP's site for it): the sampled stacks then say only
  # how a line's bytes split among its callers, and the graph's top row
  # agrees with the report's table.
  def self.exact(dump, recs)
    factors = MwrapReport.exact_factors(dump)
    recs.map { |s| s[:stack] ? MwrapReport.scaled(s, factors[s[:location]]) : s }
  end

  # FRAMES (innermost first) as an alloc view path: [frames, via] where
  # via is the library line the frames start above, or nil; SCOPE says
  # which frames are the application's (MwrapReport::Scope).
  def self.alloc_path(frames, scope)
    i = scope.first_app(frames)
    i&.positive? ? [frames[i..], MwrapReport.frame_location(frames.first)] : [frames, nil]
  end

  # The roots of VIEW ("alloc" or "outer") over DUMP's stacks, widest
  # first: [Node...]; [] when the dump has no stacks.
  def self.roots(dump, view: "alloc", focus: nil)
    scope = MwrapReport.scope(dump, focus)
    top = Node.new(nil, [], 0, {}, false, nil)
    records(dump, focus: focus).each do |s|
      live = s[:live].to_i
      frames = MwrapReport.frames_of(s)
      via = nil
      if view == "alloc"
        frames, via = alloc_path(frames, scope)
      else
        frames = frames.reverse
      end
      node = top
      frames.each_with_index do |f, depth|
        path, line, label = MwrapReport.frame_parts(f)
        location = line ? "#{path}:#{line}" : path
        # a block and its method on one line (n.times { ... }) are one box
        if node.location == location
          node.labels |= [label] if label
          next
        end
        node = node.child(location)
        node.bytes += live
        node.labels |= [label] if label
        node.library = !scope.app?(f)
        next unless depth.zero? && via

        (node.via ||= Hash.new(0))[via] += live
      end
    end
    sorted(top.kids.values)
  end

  def self.sorted(nodes)
    nodes.sort_by { |n| [-n.bytes, n.location] }
  end

  # A node's name as the graph shows it: "path:line in a, b".
  def self.name(node)
    node.labels.empty? ? node.location : "#{node.location} in #{node.labels.join(', ')}"
  end

  # The nodes of ROOTS as the page's script reads them: NAMES (a Hash,
  # name => index, filled here) in one table, each node [name index, bytes, children, flags, via] (flags: 1
  # library code; via: "path:line (80%)" words or nil), children narrower
  # than MIN bytes left out (their bytes stay in their parent's).
  def self.compact(roots, names, min)
    roots.select { |n| n.bytes >= min }.map do |n|
      i = names[name(n)] ||= names.size
      via = n.via && n.via.sort_by { |l, b| [-b, l] }
                          .map { |l, b| MwrapReport.caller_words(l, b.to_f / n.bytes) }.join(", ")
      node = [i, n.bytes, compact(sorted(n.kids.values), names, min), n.library ? 1 : 0]
      via ? node << via : node
    end
  end

  # Nodes narrower than this share of all the graph's bytes are left out:
  # a thousandth of a pixel at the page's width, unseen even when zoomed
  # in a hundredfold.
  MIN_SHARE = 1e-6

  # Both views of DUMP as one JSON-ready Hash: { names:, total:, alloc:,
  # outer: } (see compact), nil when the dump has no stacks.
  def self.data(dump, focus: nil)
    alloc = roots(dump, view: "alloc", focus: focus)
    return nil if alloc.empty?

    total = alloc.sum(&:bytes)
    min = [total * MIN_SHARE, 1].max
    names = {}
    views = { "alloc" => compact(alloc, names, min),
              "outer" => compact(roots(dump, view: "outer", focus: focus), names, min) }
    { "names" => names.keys, "total" => total }.merge(views)
  end
end
