# SPDX-License-Identifier: MIT
"""MwrapRack mounted at /MWRAP, called with hand-built Rack envs (no
server, no rack gem): every link on its pages resolves under the mount,
whether the index is asked for as /MWRAP or /MWRAP/, and the sites
table sorts by live bytes unless told otherwise."""
import html
import json
import re
import urllib.parse

from conftest import MWRAP, RUBY_API_I


# Reads "PATH_INFO QUERY_STRING" lines and prints each response as JSON.
APP = """\
require "json"
require "mwrap_rack"
$stdout.sync = true
KEEP = []
def leak
  300.times { KEEP << ("L" * 9000) }
end
def churn
  3000.times { "C" * 5000 }
end
leak
churn
GC.start # the churn is garbage: collected, it holds nothing
app = MwrapRack.new
puts "ready"
$stdin.each_line do |l|
  path, query = l.chomp.split(" ", 2)
  path = "" if path == "-"
  env = { "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "/MWRAP", "PATH_INFO" => path,
          "QUERY_STRING" => query.to_s, "SERVER_NAME" => "localhost", "SERVER_PORT" => "80" }
  status, _headers, body = app.call(env)
  puts JSON.generate("status" => status, "body" => body.join)
end
"""
LEAK_LINE, CHURN_LINE = 6, 9


def get(t, path, query=""):
    """(status, body) of the app at /MWRAP + path."""
    t.send(f"{path or '-'} {query}")
    r = json.loads(t.expect("{"))
    return r["status"], r["body"]


def links(url, body):
    """The page's hrefs resolved as a browser would from url."""
    return [urllib.parse.urljoin(url, html.unescape(h))
            for h in re.findall(r'href="([^"]*)"', body)]


def test_links_stay_under_the_mount(spawn, tmp):
    script = tmp / "app.rb"
    script.write_text(APP)
    t = spawn([MWRAP, "ruby", *RUBY_API_I, str(script)])
    t.expect("ready")
    for path in ("", "/"):
        status, body = get(t, path)
        assert status == 200
        found = links(f"http://localhost/MWRAP{path}", body)
        assert "http://localhost/MWRAP/each/2000" in found
        assert "http://localhost/MWRAP/heap_pages" in found
        assert all(u.startswith("http://localhost/MWRAP/") for u in found), found

    status, body = get(t, "/each/2000")
    assert status == 200
    url = "http://localhost/MWRAP/each/2000"
    found = links(url, body)
    assert f"{url}?sort=total" in found and f"{url}?sort=live" in found
    assert all(u.startswith("http://localhost/MWRAP/") for u in found), found
    # the default sort is live bytes, and its column says so
    assert '<th class="sorted"><a href="/MWRAP/each/2000?sort=live">' in body
    locs = [html.unescape(m) for m in re.findall(r'<td class="loc"><a [^>]*>(.*?)</a>', body)]
    # the leak is the first Ruby line (a native site of Ruby's own, e.g.
    # 3.2's heap pages in rb_aligned_malloc, may hold more)
    assert [x for x in locs if re.fullmatch(r".+\.rb:\d+", x)][0] == f"{script}:{LEAK_LINE}"
    # churn allocated more in total but holds nothing: below the leak
    assert f"{script}:{CHURN_LINE}" in locs
    status, body = get(t, "/each/2000", "sort=total")
    locs = [html.unescape(m) for m in re.findall(r'<td class="loc"><a [^>]*>(.*?)</a>', body)]
    assert locs.index(f"{script}:{CHURN_LINE}") < locs.index(f"{script}:{LEAK_LINE}")

    # the leak's link leads to its page, under the mount
    at = [u for u in links(url, get(t, "/each/2000")[1])
          if u.startswith("http://localhost/MWRAP/at/")]
    leak = [u for u in at if urllib.parse.unquote_plus(u).endswith(f"app.rb:{LEAK_LINE}")]
    assert len(leak) == 1
    status, body = get(t, urllib.parse.urlsplit(leak[0]).path[len("/MWRAP"):])
    assert status == 200 and body.count("<td>9001</td>") >= 300
    assert t.finish()[0] == 0
