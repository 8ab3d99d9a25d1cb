# SPDX-License-Identifier: MIT
"""--push URL (issue 45 item 2): each window's profile sent to Grafana
Pyroscope's ingest API.  No Pyroscope runs here: the server below checks
each request as Pyroscope's documentation states the API
(docs/sources/configure-server/about-server-api.md: POST /ingest, query
name, from, until required, format=pprof; for a pprof with sample types
other than Go's, a multipart/form-data body with the profile in a file
field "profile" and a JSON file field "sample_type_config" whose entries
have units samples|objects|bytes, aggregation sum|average, display-name,
sampled), answers 400 with the reasons when it does not, and stores what
it accepts; the real `go tool pprof` then reads a stored profile: the
leak line first, --label's labels on its samples.  A server that fails
first gets the push again (backoff), and a dead or silent one never
stops the windows."""
import base64
import gzip
import http.server
import json
import os
import re
import signal
import socket
import threading
import time
import urllib.parse
import zlib

import pytest

from conftest import ROOT, run, scaled, start_leak
# every: the fixture that starts mwrap-attach --every runs and never leaves one
from test_serve import (Feeder, every, finish_unchanged, go_pprof, leak_row,  # noqa: F401
                        needs_go, needs_ptrace, top_rows)

EVERY, WINDOW = "3", "1.5"
UNITS = {"samples", "objects", "bytes"}
AGGREGATIONS = {"sum", "average"}
# Go's types Pyroscope knows without a configuration
GO_TYPES = {"cpu", "inuse_objects", "inuse_space", "alloc_objects", "alloc_space"}


def varint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7f) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def fields(buf):
    """A protobuf message's fields: [(number, int or bytes)]; raises on
    anything that is not one."""
    out, pos = [], 0
    while pos < len(buf):
        tag, pos = varint(buf, pos)
        kind = tag & 7
        if kind == 0:
            value, pos = varint(buf, pos)
        elif kind == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
            if pos > len(buf):
                raise ValueError("truncated")
        else:
            raise ValueError(f"wire type {kind}")
        out.append((tag >> 3, value))
    return out


def sample_types(profile):
    """The sample type names of a profile.proto (gzip'd)."""
    top = fields(gzip.decompress(profile))
    strings = [v.decode() for f, v in top if f == 6]
    return [strings[dict(fields(v))[1]] for f, v in top if f == 1]


def multipart(body, content_type):
    """{field: (filename, content type, bytes)} of a multipart/form-data
    BODY (RFC 7578), or raises with what is wrong."""
    m = re.fullmatch(r"multipart/form-data;\s*boundary=\"?([^\";]+)\"?", content_type or "")
    if not m:
        raise ValueError(f"Content-Type is {content_type!r}, not multipart/form-data with a boundary")
    delim = b"--" + m.group(1).encode()
    chunks = body.split(delim)
    if chunks[0] != b"" or chunks[-1] not in (b"--\r\n", b"--"):
        raise ValueError("the body is not delimited by its boundary")
    parts = {}
    for chunk in chunks[1:-1]:
        if not (chunk.startswith(b"\r\n") and chunk.endswith(b"\r\n")):
            raise ValueError("a part is not framed by CRLF")
        head, sep, data = chunk[2:-2].partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("a part has no header end")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n"))
        disp = headers.get("Content-Disposition", "")
        name = re.search(r'\bname="([^"]*)"', disp)
        filename = re.search(r'\bfilename="([^"]*)"', disp)
        if not disp.startswith("form-data;") or not name:
            raise ValueError(f"a part's Content-Disposition is {disp!r}")
        parts[name.group(1)] = (filename and filename.group(1), headers.get("Content-Type"), data)
    return parts


def check_ingest(path, headers, body, prefix=""):
    """What is wrong with a request to Pyroscope's PREFIX/ingest, as its
    API documentation states it ([] when nothing), and what it carries."""
    url = urllib.parse.urlsplit(path)
    q = urllib.parse.parse_qs(url.query, strict_parsing=True)
    wrong = []
    if url.path != prefix + "/ingest":
        wrong.append(f"path {url.path}")
    for key in ("name", "from", "until"):
        if len(q.get(key, [])) != 1:
            wrong.append(f"{key} is required once")
    if q.get("format") != ["pprof"]:
        wrong.append(f"format {q.get('format')}")
    got = {k: v[0] for k, v in q.items()}
    m = re.fullmatch(r"([^{}]+)\{([^{}]*)\}", got.get("name", ""))
    if not m:
        wrong.append(f"name {got.get('name')!r} is not APP{{labels}}")
    else:
        got["app"] = m.group(1)
        got["labels"] = dict(kv.split("=", 1) for kv in m.group(2).split(",")) if m.group(2) else {}
    if not (got.get("from", "").isdigit() and got.get("until", "").isdigit()
            and int(got["from"]) < int(got["until"])):
        wrong.append(f"from {got.get('from')} until {got.get('until')}: UNIX times, from first")
    try:
        parts = multipart(body, headers.get("Content-Type"))
        filename, _, profile = parts["profile"]
        if not filename:
            wrong.append("profile is not a file field")
        types = sample_types(profile)   # a gzip'd profile.proto
        config = json.loads(parts["sample_type_config"][2])
        for t in set(types) - GO_TYPES:
            if t not in config:
                wrong.append(f"sample type {t} has no sample_type_config")
        for t, c in config.items():
            if c.get("units") not in UNITS or c.get("aggregation") not in AGGREGATIONS or \
                    not isinstance(c.get("sampled"), bool) or not isinstance(c.get("display-name"), str):
                wrong.append(f"sample_type_config of {t}: {c}")
        got.update(profile=profile, types=types, config=config, parts=sorted(parts))
    except (KeyError, ValueError, OSError, EOFError, zlib.error, IndexError, UnicodeDecodeError) as e:
        wrong.append(f"body: {e!r}")
    return wrong, got


class Ingest(http.server.ThreadingHTTPServer):
    """A stand-in for Pyroscope's /ingest on 127.0.0.1 (under PREFIX, as
    behind a proxy; wanting AUTH, user:password, as Basic): checks every
    request (check_ingest), answers FAIL_FIRST of them 503 first, and
    keeps what it accepted in .stored."""

    def __init__(self, fail_first=0, prefix="", auth=None):
        self.fail_first, self.requests, self.stored, self.refused = fail_first, 0, [], []
        self.prefix, self.auth = prefix, auth
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), IngestHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class IngestHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, text):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text.encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        srv = self.server
        with srv.lock:
            srv.requests += 1
            n = srv.requests
        if n <= srv.fail_first:
            return self.answer(503, "ingester unavailable")
        wrong, got = check_ingest(self.path, self.headers, body, srv.prefix)
        if srv.auth and self.headers.get("Authorization") != \
                "Basic " + base64.b64encode(srv.auth.encode()).decode():
            wrong.append(f"Authorization {self.headers.get('Authorization')!r}")
        with srv.lock:
            (srv.refused if wrong else srv.stored).append(wrong or got)
        self.answer(400 if wrong else 200, "; ".join(wrong))


def form(fields, boundary="b0undary"):
    """A multipart/form-data body of file fields {name: bytes}."""
    body = b"".join(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s.bin\"\r\n"
                    b"Content-Type: application/octet-stream\r\n\r\n%s\r\n"
                    % (boundary.encode(), k.encode(), k.encode(), v) for k, v in fields.items())
    return body + b"--%s--\r\n" % boundary.encode(), f"multipart/form-data; boundary={boundary}"


@pytest.mark.fast
def test_the_stand_in_refuses_what_the_api_does_not_state(tmp):
    """The checker itself: a request as documented passes, each
    departure from it is named."""
    dump = os.path.join(ROOT, "tests", "data", "new.json")
    out = tmp / "p.pb.gz"
    p = run([os.path.join(ROOT, "scripts", "mwrap-report"), "--format", "pprof", "-o", str(out), dump])
    assert p.returncode == 0, p.stderr
    profile = out.read_bytes()
    config = json.dumps({t: {"units": "bytes", "aggregation": "sum", "display-name": t, "sampled": False}
                         for t in sample_types(profile)}).encode()
    good = "/ingest?name=app%7Bpod%3Dw%7D&from=100&until=110&format=pprof"
    body, ctype = form({"profile": profile, "sample_type_config": config})
    assert check_ingest(good, {"Content-Type": ctype}, body)[0] == []
    bad = [(good.replace("format=pprof", "format=folded"), {"profile": profile, "sample_type_config": config}),
           (good.replace("&until=110", ""), {"profile": profile, "sample_type_config": config}),
           (good.replace("from=100", "from=120"), {"profile": profile, "sample_type_config": config}),
           (good.replace("%7Bpod%3Dw%7D", ""), {"profile": profile, "sample_type_config": config}),
           (good, {"profile": profile}),
           (good, {"profile": profile[:40], "sample_type_config": config}),
           (good, {"profile": profile, "sample_type_config": b'{"inuse_space": {"units": "MB"}}'})]
    for path, fields in bad:
        body, ctype = form(fields)
        assert check_ingest(path, {"Content-Type": ctype}, body)[0], (path, sorted(fields))
    body, _ = form({"profile": profile, "sample_type_config": config})
    assert check_ingest(good, {"Content-Type": "application/octet-stream"}, body)[0]


@pytest.fixture
def ingest():
    servers = []

    def start(**kw):
        s = Ingest(**kw)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()
        s.thread.join(timeout=scaled(10))


@needs_ptrace
@needs_go
def test_pushed_profile_is_well_formed_names_the_leak_and_carries_the_labels(spawn, every, ingest, tmp):
    server = ingest()
    t, line, _ = start_leak(spawn)
    feeder = Feeder(t)
    t0 = int(time.time())
    r = every(t.pid, ["--every", EVERY, "-d", WINDOW, "--push", server.url, "--app", "shop-api",
                      "--label", "service=shop", "--label", "pod=web-1", "--label", "version=1.2.3"])
    r.expect(rf"^mwrap-attach: pushed window 1 to {re.escape(server.url)}/ingest \(HTTP 200")
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    assert server.refused == []
    got = server.stored[0]
    assert got["app"] == "shop-api"
    assert got["labels"] == {"service": "shop", "pod": "web-1", "version": "1.2.3"}
    assert t0 <= int(got["from"]) < int(got["until"]) <= int(time.time()) + 1
    assert int(got["until"]) - int(got["from"]) <= 3    # a 1.5 s window
    assert got["parts"] == ["profile", "sample_type_config"]
    assert {"inuse_space", "alloc_space"} <= set(got["types"])
    assert got["config"]["inuse_space"]["aggregation"] == "average"
    assert got["config"]["alloc_space"]["aggregation"] == "sum"
    stored = tmp / "pushed.pb.gz"
    stored.write_bytes(got["profile"])
    rc, out, err = go_pprof(tmp, "-top", "-sample_index=inuse_space", str(stored))
    assert rc == 0, err
    assert leak_row(top_rows(out)[0], line), out
    rc, out, err = go_pprof(tmp, "-tags", str(stored))
    assert rc == 0, err
    for key, value in got["labels"].items():
        assert re.search(rf"{key}: Total .*\n\s+\S+ \(\s*100%\): {re.escape(value)}", out), out
    finish_unchanged(t, feeder)


@needs_ptrace
def test_a_failing_server_gets_the_push_again(spawn, every, ingest):
    """Behind a proxy: a path prefix and Basic credentials in the URL,
    which stderr never shows."""
    server = ingest(fail_first=2, prefix="/tenant-a", auth="ops:s3 cret")
    t, _, _ = start_leak(spawn)
    url = server.url.replace("http://", "http://ops:s3%20cret@") + "/tenant-a"
    r = every(t.pid, ["--every", EVERY, "-d", WINDOW, "--push", url])
    r.expect(r"^mwrap-attach: pushed window 1 to ")
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    tries = [l for l in r.err if l.startswith("mwrap-attach: push of window 1 ")]
    assert [re.search(r"\(try \d of 3\)", l).group(0) for l in tries] == ["(try 1 of 3)", "(try 2 of 3)"], tries
    assert all("HTTP 503: ingester unavailable; again in" in l for l in tries), tries
    assert server.requests >= 3 and server.refused == []
    assert server.stored[0]["app"] == "ruby"      # the target's comm
    assert all(f"{server.url}/tenant-a/ingest" in l for l in tries), tries
    assert not [l for l in r.err if "s3" in l], r.err


@needs_ptrace
@pytest.mark.parametrize("how", ["refused", "silent"])
def test_a_dead_server_never_stops_the_windows(spawn, every, how):
    """Refused: nothing listens on the port.  Silent: a socket listens
    and never answers (each try ends by its timeout)."""
    t, _, _ = start_leak(spawn)
    feeder = Feeder(t)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        if how == "silent":
            sock.listen(16)
        else:
            sock.close()
        r = every(t.pid, ["--every", EVERY, "-d", WINDOW, "--push", f"http://127.0.0.1:{port}"])
        r.expect(r"^mwrap-attach: push of window 1 .* failed")
        r.expect(r"^mwrap-attach: window 3: ", timeout=30)
        rc, took = r.stop(signal.SIGTERM)
    assert rc == 0 and took < scaled(8), (rc, took, r.err)
    failures = [l for l in r.err if re.match(r"mwrap-attach: push of window \d", l)]
    want = "Connection refused" if how == "refused" else "timed out: no answer within 2 s"
    assert failures and all(want in l for l in failures), failures
    assert not [l for l in r.err if l.startswith("mwrap-attach: pushed")]
    finish_unchanged(t, feeder)
