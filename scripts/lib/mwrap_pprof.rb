# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# A dump as a pprof profile (gzip'd profile.proto, what pprof, Pyroscope
# and Parca read), written with a small protobuf encoder of our own.
#
# Sample types: alloc_objects/count, alloc_space/bytes, inuse_objects/
# count, inuse_space/bytes.  A Ruby site "path:line" becomes a function
# named "path:line" (the dump carries no method names) whose Function
# and Line records hold path and line: pprof ranks functions, so each
# line is its own row in `pprof -top`.  A native site
# "binary(function+0xOFF)[0xADDR]" is a location at ADDR in binary's
# mapping, in the function the dump named (from the binary's .symtab,
# its debug file's or its .dynsym).  A site no function covers comes as
# "binary(+0xOFF)[0xADDR]", named "binary+0xOFF", and its mapping lacks
# has_functions: what pprof's binutils symbolizer needs to try the
# binary itself (`go tool pprof` reads only Go symbol tables and keeps
# our names).  A binary's mapping is the one its dump's "mapping"
# record gives (start, limit, file offset and build ID, what pprof and
# Parca match debug files by); without one (mwrap's three columns, older
# dumps) it spans the load base (ADDR - OFF) to past the highest site,
# or nothing where every site was named, with no build ID.
#
# A site recorded with --stacks is a sample of many locations, one per
# Ruby frame ("path:line in label", innermost first, as pprof wants
# them), each a function of that name whose Line record holds path and
# line: `pprof -traces` shows the stacks, `-top -cum` ranks the callers.
require "stringio"
require_relative "mwrap_report"

module MwrapPprof
  # Protobuf wire format: varints (type 0) and length-delimited fields
  # (type 2) are all a profile needs.
  module Wire
    def self.varint(n)
      n &= 0xffff_ffff_ffff_ffff # int64 negatives as two's complement
      out = +"".b
      loop do
        byte = n & 0x7f
        n >>= 7
        out << (n.zero? ? byte : byte | 0x80).chr
        return out if n.zero?
      end
    end

    def self.int(field, n)
      n.zero? ? "".b : varint(field << 3) + varint(n)
    end

    def self.bytes(field, str)
      str = str.b
      varint((field << 3) | 2) + varint(str.bytesize) + str
    end

    def self.packed(field, nums)
      nums.empty? ? "".b : bytes(field, nums.map { |n| varint(n) }.join)
    end
  end

  NATIVE = /\A(.*)\((.*)\+0x(\h+)\)\[0x(\h+)\]\z/.freeze
  RUBY = /\A(.*):(\d+)\z/.freeze
  # a --stacks frame
  RUBY_FRAME = /\A(.+?):(\d+) in (.*)\z/m.freeze
  # Ruby sites' mapping: without one pprof says "Main binary filename not
  # available"; the brackets tell it there is nothing to symbolize.
  RUBY_MAPPING = "[ruby]"

  class Builder
    # mappings: the dump's mapping records (hashes), or nil
    def initialize(mappings = nil)
      @known = {}
      Array(mappings).each { |m| @known[m["path"]] ||= m if m["path"] }
      @strings = { "" => 0 }
      @functions = {}
      @mappings = {}
      @locations = []
      @location_ids = {}
      @body = +"".b
    end

    # The location of a site's name or a stack's frame, made once.
    def location_of(name)
      @location_ids[name] ||= location(name)
    end

    def str(s)
      @strings[s] ||= @strings.size
    end

    def function(name, file, line = 0)
      @functions[[name, file, line]] ||= @functions.size + 1
    end

    # base: the load base, or nil where the dump gave only symbol
    # offsets.  limit: past the highest site's page, as pprof symbolizes
    # only addresses inside [start, limit).  The dump's record of the
    # file, when it holds ADDR, gives all of them and the build ID.
    def mapping(file, base, addr)
      m = @mappings[file] ||= { id: @mappings.size + 1, base: nil, limit: 0, symbolized: true }
      rec = @known[file]
      m[:record] ||= rec if rec && addr >= rec["start"].to_i && addr < rec["limit"].to_i
      m[:base] ||= base
      m[:limit] = [m[:limit], (addr | 0xfff) + 1].max
      m[:symbolized] &&= base.nil?
      m[:id]
    end

    # One location per site; returns its id.
    def location(site_name)
      id = @locations.size + 1
      if (m = NATIVE.match(site_name))
        file, sym, off, addr = m[1], m[2], m[3].to_i(16), m[4].to_i(16)
        fn = function(sym.empty? ? "#{File.basename(file)}+0x#{m[3]}" : sym, "")
        @locations << [id, mapping(file, sym.empty? ? addr - off : nil, addr), addr, fn, 0]
      elsif (m = RUBY_FRAME.match(site_name))
        line = m[2].to_i
        @locations << [id, mapping(RUBY_MAPPING, nil, 0), 0, function(site_name, m[1], line), line]
      elsif (m = RUBY.match(site_name))
        line = m[2].to_i
        @locations << [id, mapping(RUBY_MAPPING, nil, 0), 0, function(site_name, m[1], line), line]
      else
        @locations << [id, mapping(RUBY_MAPPING, nil, 0), 0, function(site_name, ""), 0]
      end
      id
    end

    # location_ids: the leaf first; labels: [[key, value]] (strings)
    def sample(location_ids, values, labels = [])
      tags = labels.map { |k, v| Wire.bytes(3, Wire.int(1, str(k)) + Wire.int(2, str(v))) }.join
      @body << Wire.bytes(2, Wire.packed(1, location_ids) + Wire.packed(2, values) + tags)
    end

    # HELD: a sixth sample type, held_space (live bytes that lived
    # through a GC), the profile's default.
    def encode(header, held: false)
      kinds = [%w[alloc_objects count], %w[alloc_space bytes], %w[inuse_objects count], %w[inuse_space bytes]]
      kinds << %w[held_space bytes] if held
      types = kinds.map { |t, u| Wire.bytes(1, Wire.int(1, str(t)) + Wire.int(2, str(u))) }
      mappings = @mappings.map do |file, m|
        rec = m[:record]
        start, limit, offset = if rec then [rec["start"].to_i, rec["limit"].to_i, rec["offset"].to_i]
                               elsif m[:base] then [m[:base], m[:limit], 0]
                               else [0, 0, 0]
                               end
        build_id = rec && rec["build_id"] ? Wire.int(6, str(rec["build_id"])) : "".b
        Wire.bytes(3, Wire.int(1, m[:id]) + Wire.int(2, start) + Wire.int(3, limit) + Wire.int(4, offset) +
                      Wire.int(5, str(file)) + build_id + Wire.int(7, m[:symbolized] ? 1 : 0))
      end
      locations = @locations.map do |id, mapping_id, addr, fn, line|
        Wire.bytes(4, Wire.int(1, id) + Wire.int(2, mapping_id) + Wire.int(3, addr) +
                      Wire.bytes(4, Wire.int(1, fn) + Wire.int(2, line)))
      end
      functions = @functions.map do |(name, file, line), id|
        # pprof drops "<...>" from names as C++ template arguments
        # (Ruby's "<main>", "<top (required)>"): shown as "[main]"
        Wire.bytes(5, Wire.int(1, id) + Wire.int(2, str(name.tr("<>", "[]"))) + Wire.int(3, str(name)) +
                      Wire.int(4, str(file)) + Wire.int(5, line))
      end
      comments = []
      if header["sample_bytes"].to_i.positive?
        comments << str("sampled: one allocation per ~#{header['sample_bytes']} bytes, scaled")
      end
      comments << str("mwrap-attach pid #{header['pid']}") if header["pid"]
      if header["sources"]
        comments << str("merged from #{header['sources'].size} #{header['sources_noun'] || 'sources'}: " \
                        "#{header['sources'].map { |s| s['name'] }.join(', ')} (label #{SOURCE_LABEL})")
      end
      comments << str(MwrapReport.exit_line(header)) if header["exited_after_seconds"]
      tail = Wire.int(10, (header["seconds"].to_f * 1e9).to_i) +
             Wire.bytes(11, Wire.int(1, str("space")) + Wire.int(2, str("bytes"))) +
             Wire.packed(13, comments) + Wire.int(14, str(held ? "held_space" : "inuse_space"))
      strings = @strings.keys.map { |s| Wire.bytes(6, s) }
      (types + [@body] + mappings + locations + functions + strings).join + tail
    end
  end

  # A merged dump's samples carry their source's name under this label
  # (`pprof -tags`, -tagfocus=source=NAME).
  SOURCE_LABEL = "source"

  # The gzip'd profile of @dump's @sites (MwrapReport site hashes).  In
  # a merged dump (MwrapReport.merge) each site or stack is one sample
  # per source, of that source's figures, labelled with its name: pprof
  # sums them by location (-top) and splits them by label (-tags).
  def self.profile(dump, sites)
    b = Builder.new(dump.mappings)
    held = MwrapReport.held?(dump)
    merged = Array(dump.header["sources"]).size > 1
    sites.each do |s|
      frames = s[:stack] && !s[:stack].empty? ? s[:stack] : [s[:location]]
      ids = frames.map { |f| b.location_of(f) }
      parts = merged && s[:sources] ? s[:sources].sort.map { |n, pt| [pt, [[SOURCE_LABEL, n]]] } : [[s, []]]
      parts.each do |pt, labels|
        values = [pt[:allocations].to_i, pt[:total].to_i, pt[:live_count].to_i, pt[:live].to_i]
        values << pt[:held].to_i if held
        b.sample(ids, values, labels)
      end
    end
    # here, not at the top: a Ruby built without zlib (as ours for musl
    # is, having no musl zlib) runs every other format
    require "zlib"
    io = StringIO.new(+"".b)
    gz = Zlib::GzipWriter.new(io)
    gz.write(b.encode(dump.header, held: held))
    gz.close
    io.string
  end
end
