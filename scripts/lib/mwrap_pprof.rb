# frozen_string_literal: true
#
# A dump as a pprof profile (gzip'd profile.proto, what pprof, Pyroscope
# and Parca read), written with a small protobuf encoder of our own.
#
# Sample types: alloc_objects/count, alloc_space/bytes, inuse_objects/
# count, inuse_space/bytes.  A Ruby site "path:line" becomes a function
# named after its file with a line; a native site
# "binary(symbol+0xOFF)[0xADDR]" a location at ADDR in binary's mapping,
# in a function named after the symbol (or binary+offset).
require "stringio"
require "zlib"

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

  class Builder
    def initialize
      @strings = { "" => 0 }
      @functions = {}
      @mappings = {}
      @locations = []
      @body = +"".b
    end

    def str(s)
      @strings[s] ||= @strings.size
    end

    def function(name, file)
      @functions[[name, file]] ||= @functions.size + 1
    end

    def mapping(file, base)
      @mappings[file] ||= { id: @mappings.size + 1, base: base }
      @mappings[file][:id]
    end

    # One location per site; returns its id.
    def location(site_name)
      id = @locations.size + 1
      if (m = NATIVE.match(site_name))
        file, sym, off, addr = m[1], m[2], m[3].to_i(16), m[4].to_i(16)
        base = sym.empty? ? addr - off : 0
        fn = function(sym.empty? ? "#{File.basename(file)}+0x#{m[3]}" : sym, file)
        @locations << [id, mapping(file, base), addr, fn, 0]
      elsif (m = RUBY.match(site_name))
        @locations << [id, 0, 0, function(m[1], m[1]), m[2].to_i]
      else
        @locations << [id, 0, 0, function(site_name, ""), 0]
      end
      id
    end

    def sample(location_id, values)
      @body << Wire.bytes(2, Wire.packed(1, [location_id]) + Wire.packed(2, values))
    end

    def encode(header)
      types = [%w[alloc_objects count], %w[alloc_space bytes], %w[inuse_objects count],
               %w[inuse_space bytes]].map { |t, u| Wire.bytes(1, Wire.int(1, str(t)) + Wire.int(2, str(u))) }
      mappings = @mappings.map do |file, m|
        Wire.bytes(3, Wire.int(1, m[:id]) + Wire.int(2, m[:base]) + Wire.int(5, str(file)) +
                      Wire.int(7, 1))
      end
      locations = @locations.map do |id, mapping_id, addr, fn, line|
        Wire.bytes(4, Wire.int(1, id) + Wire.int(2, mapping_id) + Wire.int(3, addr) +
                      Wire.bytes(4, Wire.int(1, fn) + Wire.int(2, line)))
      end
      functions = @functions.map do |(name, file), id|
        Wire.bytes(5, Wire.int(1, id) + Wire.int(2, str(name)) + Wire.int(3, str(name)) +
                      Wire.int(4, str(file)))
      end
      comments = []
      if header["sample_bytes"].to_i.positive?
        comments << str("sampled: one allocation per ~#{header['sample_bytes']} bytes, scaled")
      end
      comments << str("mwrap-attach pid #{header['pid']}") if header["pid"]
      tail = Wire.int(10, (header["seconds"].to_f * 1e9).to_i) +
             Wire.bytes(11, Wire.int(1, str("space")) + Wire.int(2, str("bytes"))) +
             Wire.packed(13, comments) + Wire.int(14, str("inuse_space"))
      strings = @strings.keys.map { |s| Wire.bytes(6, s) }
      (types + [@body] + mappings + locations + functions + strings).join + tail
    end
  end

  # The gzip'd profile of @dump's @sites (MwrapReport site hashes).
  def self.profile(dump, sites)
    b = Builder.new
    sites.each do |s|
      live = s[:live] || 0
      b.sample(b.location(s[:location]), [s[:allocations], s[:total], s[:live_count] || 0, live])
    end
    io = StringIO.new(+"".b)
    gz = Zlib::GzipWriter.new(io)
    gz.write(b.encode(dump.header))
    gz.close
    io.string
  end
end
