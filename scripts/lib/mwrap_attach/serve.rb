# SPDX-License-Identifier: MIT
# frozen_string_literal: true

require "socket"
require_relative "failure"
require_relative "output"

module MwrapAttach
  # --serve ADDR:PORT: the latest window's profile over HTTP, as Go's
  # net/http/pprof serves /debug/pprof/heap, for `go tool pprof URL`,
  # Parca's and Grafana Alloy's scrapes.  Answers come from one thread
  # that accepts and one short-lived thread per connection, reading only
  # the profile last published (a frozen String swapped whole): the
  # windows never wait for a client.  Every read from a client is bounded
  # (READ_SECONDS, HEADER_BYTES) and at most MAX_CLIENTS are served at
  # once; a client over that is closed at once.
  class ProfileServer
    extend Fails
    include Fails

    # what net/http/pprof serves this profile at: heap (in use), and
    # allocs (the same profile; Go's allocs only changes the default
    # sample type, and Parca's and Alloy's "memory" scrape asks for it)
    PATHS = %w[/debug/pprof/heap /debug/pprof/allocs].freeze
    READ_SECONDS = 5
    HEADER_BYTES = 16 * 1024
    MAX_CLIENTS = 16

    # "HOST:PORT", ":PORT" (every interface, as Go reads it) or
    # "[V6]:PORT" -> [host, port]; fails (usage) on anything else.
    def self.parse(spec)
      m = spec.to_s.match(/\A(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]\s]*)):(\d{1,5})\z/)
      unless m && m[3].to_i <= 65_535
        fail!(EXIT[:usage], "--serve wants ADDR:PORT (127.0.0.1:6060, :6060, [::1]:6060), got #{spec.inspect}")
      end
      host = m[1] || m[2]
      [host.empty? ? "0.0.0.0" : host, m[3].to_i]
    end

    attr_reader :url

    # When the first window is due to end (a CLOCK_MONOTONIC time), what
    # a client asking before then is told.
    attr_accessor :first_due

    # Listens on SPEC (parse's) now, before anything touches the target;
    # fails (usage) when it cannot.  PID: the target, named to a client
    # asking before the first window ended.
    def initialize(spec, pid)
      host, port = self.class.parse(spec)
      begin
        @server = TCPServer.new(host, port)
      rescue SocketError, SystemCallError => e
        fail!(EXIT[:usage], "--serve #{spec}: cannot listen: #{Output.strerror(e)}",
              "give an address of this host and a free port (port 0: any free one)")
      end
      bound = @server.local_address
      shown = bound.ipv6? ? "[#{bound.ip_address}]" : bound.ip_address
      shown = "127.0.0.1" if shown == "0.0.0.0"
      @url = "http://#{shown}:#{bound.ip_port}#{PATHS.first}"
      @pid = pid
      @first_due = nil
      @latest = nil
      @clients = Queue.new
      MAX_CLIENTS.times { @clients << true }
      @thread = Thread.new { accept_loop }
      @thread.report_on_exception = false
    end

    # PROFILE (gzip'd profile.proto) is what clients get from now on.
    def publish(profile)
      @latest = profile.b.freeze
    end

    # Stops listening; connections under way end with their answer.
    def close
      @server.close
      @thread.join(READ_SECONDS)
    rescue IOError
      nil
    end

    private

    def accept_loop
      loop do
        sock = @server.accept
        begin
          @clients.pop(true)
        rescue ThreadError
          sock.close # too many at once
          next
        end
        Thread.new(sock) do |s|
          answer(s)
        ensure
          s.close rescue nil
          @clients << true
        end.report_on_exception = false
      end
    rescue IOError, SystemCallError
      nil # closed
    end

    # Reads one request from SOCK (its head only) and answers it.
    def answer(sock)
      head = read_head(sock)
      return respond(sock, 400, "bad request\n") unless head

      method, target = head.lines.first.to_s.split
      path = target.to_s.split("?", 2).first
      return respond(sock, 400, "bad request\n") unless method && path

      return respond(sock, 405, "method not allowed\n", { "Allow" => "GET, HEAD" }) unless %w[GET HEAD].include?(method)

      send_body = method == "GET"
      profile = @latest
      if !PATHS.include?(path)
        # net/http/pprof: an unknown profile under its prefix, else the mux's 404
        text = path.start_with?("/debug/pprof/") ? "Unknown profile\n" : "404 page not found\n"
        respond(sock, 404, text, go_error_headers, send_body: send_body)
      elsif profile.nil?
        text, seconds = waiting
        respond(sock, 503, text, go_error_headers.merge("Retry-After" => seconds.to_s), send_body: send_body)
      else
        respond(sock, 200, profile, { "Content-Type" => "application/octet-stream",
                                      "Content-Disposition" => %(attachment; filename="#{File.basename(path)}") },
                send_body: send_body)
      end
    rescue IOError, SystemCallError
      nil # the client went away
    end

    # [what a client is told before the first window ended, in how many
    # seconds to ask again].
    def waiting
      return ["no profile yet: the first window on process #{@pid} has not begun\n", 5] unless @first_due

      left = (@first_due - Process.clock_gettime(Process::CLOCK_MONOTONIC)).ceil
      return ["no profile yet: the first window on process #{@pid} is ending\n", 1] unless left.positive?

      ["no profile yet: the first window on process #{@pid} ends in about #{left} s\n", left]
    end

    # What net/http/pprof's serveError sets: `go tool pprof` then shows
    # the body as the reason.
    def go_error_headers
      { "Content-Type" => "text/plain; charset=utf-8", "X-Go-Pprof" => "1" }
    end

    # The request line and headers, or nil when they do not come within
    # READ_SECONDS or HEADER_BYTES.
    def read_head(sock)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + READ_SECONDS
      buf = +"".b
      until buf.include?("\r\n\r\n") || buf.include?("\n\n")
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return nil if left <= 0 || buf.bytesize > HEADER_BYTES
        return nil unless sock.wait_readable(left)

        chunk = sock.read_nonblock(4096, exception: false)
        return nil if chunk.nil?

        buf << chunk unless chunk == :wait_readable
      end
      buf
    end

    def respond(sock, status, body, headers = {}, send_body: true)
      reason = { 200 => "OK", 400 => "Bad Request", 404 => "Not Found", 405 => "Method Not Allowed",
                 503 => "Service Unavailable" }.fetch(status)
      headers = { "Content-Type" => "text/plain; charset=utf-8" }.merge(headers)
      lines = ["HTTP/1.1 #{status} #{reason}", "X-Content-Type-Options: nosniff",
               *headers.map { |k, v| "#{k}: #{v}" },
               "Content-Length: #{body.bytesize}", "Connection: close", "", ""]
      sock.write(lines.join("\r\n"))
      sock.write(body) if send_body
    end
  end
end
