# SPDX-License-Identifier: MIT
"""MwrapRack served by WEBrick in a real process, looked at by headless
Chromium (Debian's): the sites table, sorted by live bytes, puts the
leaking line first, and a file name with '<' in it is escaped."""
import glob
import html
import re
import subprocess
import urllib.request

import pytest

from conftest import CHROMIUM, MWRAP, RUBY_API_I, chromium, run



def webrick_args():
    """-I arguments that let `ruby` require webrick: none when it has it;
    Debian's ruby-webrick's files (pure Ruby) for a Ruby built from source
    without its bundled gems (make test-ruby-src); None when neither."""
    p = subprocess.run(["ruby", "-e", "require 'webrick'"], timeout=60,
                       capture_output=True)
    if p.returncode == 0:
        return []
    for lib in sorted(glob.glob(
            "/usr/share/rubygems-integration/all/gems/webrick-*/lib")):
        p = subprocess.run(["ruby", "-I", lib, "-e", "require 'webrick'"],
                           timeout=60, capture_output=True)
        if p.returncode == 0:
            return ["-I", lib]
    return None


WEBRICK = webrick_args()

APP = """\
require "webrick"
require "stringio"
# no rack: MwrapRack needs only a Rack env (rack 3 moved its handler)
require "mwrap_rack"
$stdout.sync = true
KEEP = []
def leak
  2000.times { KEEP << ("L" * 8000) }
end
leak
# a slow leak from then on, what a window after a reset must rank first
Thread.new { loop { KEEP << ("W" * 4000); sleep 0.005 } }
class RackServlet < WEBrick::HTTPServlet::AbstractServlet
  def service(req, res)
    env = { "REQUEST_METHOD" => req.request_method, "SCRIPT_NAME" => "",
            "PATH_INFO" => req.request_uri.path, "QUERY_STRING" => req.query_string.to_s,
            "SERVER_NAME" => "127.0.0.1", "SERVER_PORT" => req.port.to_s,
            "rack.url_scheme" => "http", "rack.input" => StringIO.new("") }
    env["REQUEST_METHOD"] = req.request_method
    status, headers, body = @options[0].call(env)
    res.status = status
    headers.each { |k, v| res[k] = v }
    out = +""
    body.each { |chunk| out << chunk }
    body.close if body.respond_to?(:close)
    res.body = out
  end
end
server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0,
                                 Logger: WEBrick::Log.new(File::NULL), AccessLog: [])
server.mount "/", RackServlet, MwrapRack.new
Thread.new { $stdin.read; server.shutdown }
puts "ready #{server.listeners[0].addr[1]}"
server.start
"""
LEAK_LINE = 8
WINDOW_LINE = 12


@pytest.fixture
def server(spawn, tmp):
    if WEBRICK is None:
        pytest.skip("this ruby has no webrick (a bundled gem since 3.0) and "
                    "Debian's ruby-webrick is not installed")
    script = tmp / "leak<b>.rb"
    script.write_text(APP)
    t = spawn([MWRAP, "ruby", *RUBY_API_I] + WEBRICK + [str(script)])
    port = int(t.expect("ready").split()[1])
    return script, f"http://127.0.0.1:{port}"


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_sites_table_in_headless_chromium(server, tmp):
    script, base = server
    p = chromium(["--dump-dom", f"{base}/each/0?sort=live"], tmp)
    assert p.returncode == 0, p.stderr
    dom = p.stdout
    rows = re.findall(r'<tr><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>'
                      r'<td>(\d+)</td>.*?<td class="loc"><a [^>]*>(.*?)</a>',
                      dom)
    assert rows, dom[:2000]
    # sorted by live bytes; the leak is the first Ruby line (a native
    # site of Ruby's own, e.g. 3.2's heap pages in rb_aligned_malloc, may
    # hold more than the leak's 16 MB)
    lives = [int(r[3]) for r in rows]
    assert lives == sorted(lives, reverse=True)
    ruby_rows = [r for r in rows if re.fullmatch(r".+\.rb:\d+", html.unescape(r[4]))]
    total, allocs, frees, live, loc = ruby_rows[0]
    assert html.unescape(loc) == f"{script}:{LEAK_LINE}"
    assert int(live) >= 2000 * 8000
    # the '<b>' of the file name is text, never markup
    assert "leak&lt;b&gt;.rb" in dom and "<b>" not in dom
    shot = tmp / "each.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1280,900",
                  f"{base}/each/0?sort=live"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 1000


def test_other_pages(server):
    script, base = server
    status, body = fetch(f"{base}/")
    assert status == 200 and 'id="live"' in body and 'id="rss"' in body
    status, body = fetch(f"{base}/each/2000?sort=location")
    assert status == 200 and 'id="sites"' in body
    loc = urllib.parse.quote_plus(f"{script}:{LEAK_LINE}")
    status, body = fetch(f"{base}/at/{loc}")
    assert status == 200 and body.count("<td>8001</td>") >= 2000
    status, body = fetch(f"{base}/heap_pages")
    assert status == 200 and "lifespan_mean" in body and "heap_allocated_pages" in body
    assert fetch(f"{base}/at/nowhere.rb:1")[0] == 404
    assert fetch(f"{base}/bogus")[0] == 404


def test_a_reset_starts_a_window_that_ranks_growth_first(server):
    """Since the process started, start-up's 16 MB rank first; after a
    POST to /reset the sites count from then on: the slow leak is the
    first Ruby line, with its growth per second, and a GET does not
    reset."""
    script, base = server
    status, body = fetch(f"{base}/")
    assert status == 200 and "since tracking began" in body
    status, _ = fetch(f"{base}/reset")
    assert status == 405                  # GET changes nothing
    req = urllib.request.Request(f"{base}/reset", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:   # follows the 303
        assert r.status == 200
        body = r.read().decode()
    assert "since this page&#39;s last reset" in body or "since this page's last reset" in body
    import time
    time.sleep(1)
    status, body = fetch(f"{base}/each/0?sort=live")
    assert status == 200 and "<th>growth/s</th>" in body
    locs = [html.unescape(m) for m in re.findall(r'<td class="loc"><a [^>]*>(.*?)</a>', body)]
    ruby = [l for l in locs if re.fullmatch(r".+\.rb:\d+", l)]
    assert ruby and ruby[0] == f"{script}:{WINDOW_LINE}", ruby[:5]
