# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require "json"
require "net/http"
require "securerandom"
require "uri"
require_relative "failure"
require_relative "output"

module MwrapAttach
  # --push URL: each window's profile sent to Grafana Pyroscope's ingest
  # API as its documentation states it (docs/sources/configure-server/
  # about-server-api.md, "pprof format" and "Sample Type Configuration"):
  #   POST URL/ingest?name=APP{k=v,...}&from=UNIX&until=UNIX&format=pprof
  # with a multipart/form-data body: the gzip'd profile.proto in a file
  # field "profile", and in a file field "sample_type_config" how to read
  # each sample type (our held_space is none of Go's).  Pyroscope appends
  # each type's display name to APP (APP.inuse_space{...}).
  #
  # Pushes run on a thread of their own and never touch the target: a
  # window hands its profile over (replacing one still waiting, said on
  # stderr) and goes on.  A failed push (no connection, a timeout, 5xx,
  # 429) is tried TRIES times in all, BACKOFF apart, doubling; a newer
  # window waiting ends the retries of an older one.  Each failure is
  # one line on stderr; a failure never ends the windows.
  class Pusher
    extend Fails

    TRIES = 3
    # Pyroscope's reading of our sample types (MwrapPprof): in use and held
    # bytes are levels (averaged over time), allocations during the window
    # add up; figures are already scaled when --sample was given.
    SAMPLE_TYPES = {
      "alloc_objects" => %w[objects sum], "alloc_space" => %w[bytes sum],
      "inuse_objects" => %w[objects average], "inuse_space" => %w[bytes average],
      "held_space" => %w[bytes average]
    }.freeze
    SAMPLE_TYPE_CONFIG = JSON.generate(SAMPLE_TYPES.to_h do |type, (units, aggregation)|
      [type, { "units" => units, "aggregation" => aggregation, "display-name" => type, "sampled" => false }]
    end)

    # URL as a URI: http or https, with a host, no query; fails (usage).
    def self.parse(url)
      uri = URI.parse(url.to_s)
      ok = uri.is_a?(URI::HTTP) && !uri.host.to_s.empty? && uri.query.nil? && uri.fragment.nil?
      fail!(EXIT[:usage], "--push wants Pyroscope's URL (http://pyroscope:4040), got #{url.inspect}") unless ok
      uri
    rescue URI::InvalidURIError
      fail!(EXIT[:usage], "--push wants Pyroscope's URL (http://pyroscope:4040), got #{url.inspect}")
    end

    # URL: the server (its path, if any, is a prefix); NAME: the ingest
    # name, APP{k=v,...}; EVERY: seconds between windows, which bound a
    # try's timeout and the backoff.
    def initialize(url, name, every)
      @uri = self.class.parse(url)
      @name = name
      # said on stderr: never the password
      shown = @uri.class.build(host: @uri.host, port: @uri.port, path: @uri.path)
      @shown = "#{shown.to_s.chomp('/')}/ingest"
      @timeout = (every / 4.0).clamp(2.0, 10.0)
      @backoff = (every / 16.0).clamp(0.25, 1.0)
      @lock = Mutex.new
      @wake = ConditionVariable.new
      @pending = nil
      @closing = false
      @thread = Thread.new { run }
      @thread.report_on_exception = false
    end

    # Hands window N's PROFILE (gzip'd profile.proto, the window from
    # FROM to UNTIL, Times) to the pushing thread.
    def push(n, profile, from, till)
      @lock.synchronize do
        warn "mwrap-attach: push: window #{@pending[:n]} not sent: window #{n} replaces it" if @pending
        @pending = { n: n, profile: profile, from: from, till: till }
        @wake.signal
      end
    end

    # Lets the push under way, and one waiting, finish within WAIT
    # seconds; then stops the thread.
    def close(wait)
      @lock.synchronize do
        @closing = true
        @wake.signal
      end
      return if @thread.join(wait)

      @thread.kill
      warn "mwrap-attach: push: stopped with a push unfinished after #{wait} s"
    end

    private

    def run
      loop do
        job = @lock.synchronize do
          @wake.wait(@lock) until @pending || @closing
          @pending.tap { @pending = nil }
        end
        return unless job

        deliver(job)
      end
    end

    # Tries JOB up to TRIES times; says how it went.
    def deliver(job)
      TRIES.times do |i|
        status, why = post(job)
        if status&.between?(200, 299)
          warn "mwrap-attach: pushed window #{job[:n]} to #{@shown} (#{why})"
          return
        end
        again = status.nil? || status >= 500 || [408, 429].include?(status)
        newer = @lock.synchronize { !@pending.nil? }
        if !again || newer || i == TRIES - 1
          reason = if !again then "not retried: the server refused it"
                   elsif newer then "a newer window is waiting"
                   else "#{TRIES} tries"
                   end
          warn "mwrap-attach: push of window #{job[:n]} to #{@shown} failed: #{why}; given up (#{reason})"
          return
        end
        delay = @backoff * 2**i
        warn format("mwrap-attach: push of window %d to %s failed (try %d of %d): %s; again in %.2g s",
                    job[:n], @shown, i + 1, TRIES, why, delay)
        sleep delay
      end
    end

    # One POST of JOB: [HTTP status or nil, what happened, in words].
    def post(job)
      query = URI.encode_www_form("name" => @name, "from" => job[:from].to_i, "until" => job[:till].to_f.ceil,
                                  "format" => "pprof", "spyName" => "mwrap-attach")
      boundary = "mwrap-attach-#{SecureRandom.hex(16)}"
      req = Net::HTTP::Post.new("#{@uri.path.chomp('/')}/ingest?#{query}")
      req["Content-Type"] = "multipart/form-data; boundary=#{boundary}"
      req.basic_auth(URI.decode_www_form_component(@uri.user), URI.decode_www_form_component(@uri.password.to_s)) if @uri.user
      req.body = multipart(boundary, [["profile", "profile.pprof", "application/octet-stream", job[:profile]],
                                      ["sample_type_config", "sample_type_config.json", "application/json",
                                       SAMPLE_TYPE_CONFIG]])
      http = Net::HTTP.new(@uri.host, @uri.port)
      http.use_ssl = @uri.scheme == "https"
      http.open_timeout = http.read_timeout = http.write_timeout = @timeout
      res = http.start { |h| h.request(req) }
      text = res.body.to_s.strip[0, 200]
      [res.code.to_i, "HTTP #{res.code}#{text.empty? ? '' : ": #{text}"}"]
    rescue Net::OpenTimeout
      [nil, format("timed out: no connection within %g s", @timeout)]
    rescue Net::ReadTimeout, Net::WriteTimeout
      [nil, format("timed out: no answer within %g s", @timeout)]
    rescue StandardError => e # whatever it is, the windows go on
      [nil, e.is_a?(SystemCallError) ? Output.strerror(e) : "#{e.class.name.split('::').last}: #{e.message}"]
    end

    # A multipart/form-data body of file fields [name, filename, type,
    # bytes] (RFC 7578).
    def multipart(boundary, fields)
      body = fields.map do |name, file, type, data|
        "--#{boundary}\r\nContent-Disposition: form-data; name=\"#{name}\"; filename=\"#{file}\"\r\n" \
          "Content-Type: #{type}\r\n\r\n".b + data.b + "\r\n"
      end
      body.join + "--#{boundary}--\r\n"
    end
  end
end
