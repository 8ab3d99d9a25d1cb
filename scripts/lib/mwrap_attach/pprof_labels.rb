# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require_relative "../mwrap_pprof"

module MwrapAttach
  # A window's pprof profile (lib/mwrap_pprof.rb's) with labels on every
  # sample and the window's start as its time.  Sample labels are what
  # Pyroscope reads: its distributor adds a sample's string labels to the
  # series' own (those of the ingest name win), and `go tool pprof -tags`
  # lists them.  The profile is rewritten at its top level only: each
  # Sample record gets the Label records appended, the strings they name
  # are appended to the string table (a repeated field: new strings take
  # the next indices), and time_nanos (field 9, not set by the encoder)
  # is appended.  Everything else is copied as it was.
  module PprofLabels
    Wire = MwrapPprof::Wire

    # GZ (gzip'd profile.proto) with LABELS ([[key, value], ...]) on each
    # sample and TIME_NANOS as its time; GZ itself when there is nothing
    # to add.  Raises ArgumentError on a profile it cannot read.
    def self.apply(gz, labels, time_nanos)
      return gz if labels.empty? && time_nanos.nil?

      require "zlib" # as MwrapPprof.profile does
      fields = top_level(Zlib.gunzip(gz))
      strings = fields.count { |f, _| f == 6 }
      added = {}
      index = ->(s) { added[s] ||= strings + added.size }
      tags = labels.map { |k, v| Wire.bytes(3, Wire.int(1, index.call(k)) + Wire.int(2, index.call(v))) }.join
      out = fields.map { |f, raw, payload| f == 2 ? Wire.bytes(2, payload + tags) : raw }
      out.concat(added.keys.map { |s| Wire.bytes(6, s) })
      out << Wire.int(9, time_nanos) if time_nanos
      Zlib.gzip(out.join)
    end

    # The top-level fields of a protobuf message:
    # [[field number, its bytes as encoded, its payload (length-delimited
    # fields) or nil]].
    def self.top_level(msg)
      msg = msg.b
      pos = 0
      fields = []
      while pos < msg.bytesize
        start = pos
        tag, pos = varint(msg, pos)
        payload = nil
        case tag & 7
        when 0 then _, pos = varint(msg, pos)
        when 1 then pos += 8
        when 5 then pos += 4
        when 2
          len, pos = varint(msg, pos)
          payload = msg.byteslice(pos, len)
          pos += len
        else raise ArgumentError, "wire type #{tag & 7} at byte #{start}"
        end
        raise ArgumentError, "truncated field at byte #{start}" if pos > msg.bytesize

        fields << [tag >> 3, msg.byteslice(start, pos - start), payload]
      end
      fields
    end

    # [the varint at POS in S, the position after it].
    def self.varint(s, pos)
      n = shift = 0
      loop do
        byte = s.getbyte(pos) or raise ArgumentError, "truncated varint at byte #{pos}"
        pos += 1
        n |= (byte & 0x7f) << shift
        return [n, pos] if byte < 0x80

        shift += 7
      end
    end

    private_class_method :top_level, :varint
  end
end
