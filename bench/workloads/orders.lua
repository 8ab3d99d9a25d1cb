-- SPDX-License-Identifier: MIT
-- wrk's script for bench/puma: keep-alive POST /orders?id=N (the route of
-- tests/rails/test_rails_puma.py), with an empty body.  Run with -t 1 (one
-- Lua state, so the counts are global): every 20 responses it prints
-- "RESPONSES NON_200" (flushed, so that bench/puma timestamps them as they
-- come); on exit (SIGINT) "done REQUESTS CONNECT READ WRITE STATUS TIMEOUT",
-- wrk's own error counts.
wrk.method = "POST"
wrk.body = ""

local id, responses, non200 = 0, 0, 0

function request()
	id = id + 1
	return wrk.format(nil, "/orders?id=" .. id)
end

function response(status, headers, body)
	responses = responses + 1
	if status ~= 200 then
		non200 = non200 + 1
	end
	if responses % 20 == 0 then
		io.write(responses, " ", non200, "\n")
		io.flush()
	end
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write("done ", summary.requests, " ", e.connect, " ", e.read, " ",
		 e.write, " ", e.status, " ", e.timeout, "\n")
	io.flush()
end
