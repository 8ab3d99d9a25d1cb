# SPDX-License-Identifier: MIT
"""The HTML report as a person reads it, in headless Chromium (Debian's):
sizes in KiB/MiB with exact bytes on hover, a share column, the sorted
column marked, a long gem path wrapped (full on hover) so the page fits
1400 px.  Asserts on the DOM after the page's script ran; a screenshot
is saved beside it in the test's tmp dir."""
import json
import os
import re

import pytest

from conftest import (CHROMIUM, FLAME_FRAMES as FRAMES, ROOT, chromium, flame_frames as frames_of,
                      run, with_vars)

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")

GEM = ("/home/deploy/.local/share/gem/ruby/3.1.0/gems/activesupport-7.1.3.2/lib/"
       "active_support/core_ext/object/json_encoding_with_a_long_name/"
       "extensions/to_json_for_every_object_in_the_app.rb")
# Inserted into a copy of the page: what the layout came to, as
# attributes --dump-dom shows.
MEASURE = """<script>
document.body.dataset.pageWidth = document.documentElement.scrollWidth;
document.body.dataset.tableRight = Math.ceil(
  document.getElementById("sites").getBoundingClientRect().right);
</script></body>"""


def site(location, live, total, allocations, live_count):
    return {"type": "site", "location": location, "total_bytes": total,
            "allocations": allocations, "frees": allocations - live_count,
            "freed_bytes": total - live, "live_bytes": live,
            "live_count": live_count, "age_total": 0, "max_lifespan": 0}


SITES = [site(f"{GEM}:42", 6291456, 6291456, 1536, 1536),      # 6 MiB, 75%
         site(f"{GEM}:97", 1572864, 10485760, 40960, 6144),    # 1.5 MiB of 10 MiB
         site("app/models/user.rb:12", 524288, 524288, 512, 512)]


def rows(dom):
    """[[cell text...]] of the sites table, tags stripped."""
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body)]


def sorted_heads(dom):
    """(column, aria-sort) of each header marked sorted."""
    return [(m.group(1), re.search(r'aria-sort="(\w+)"', m.group(0)).group(1))
            for m in re.finditer(r'<th data-col="(\w+)"[^>]*class="sorted"[^>]*>', dom)]


def page_in_chromium(tmp, name, sites, script):
    """SITES as mwrap-report's HTML page, and its DOM in a 1400 px wide
    headless chromium after SCRIPT (which ends with </body>) ran in it:
    (the page's HTML, the DOM)."""
    dump = tmp / f"{name}.json"
    header = {"type": "header", "version": "0.1", "pid": 4242, "seconds": 30, "sample_bytes": 0}
    dump.write_text("".join(json.dumps(r) + "\n" for r in [header] + sites))
    page = tmp / f"{name}.html"
    p = run([REPORT, "--format", "html", "-o", str(page), str(dump)])
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    measured = tmp / f"{name}-measured.html"
    measured.write_text(html.replace("</body>", script))
    p = chromium(["--window-size=1400,900", "--dump-dom", f"file://{measured}"], tmp)
    assert p.returncode == 0, p.stderr
    return html, p.stdout


def test_report_reads_in_1400_px(tmp):
    html, dom = page_in_chromium(tmp, "report", SITES, MEASURE)
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<script src" not in html and "<link" not in html
    assert sorted_heads(dom) == [("live", "descending")]
    # live, share, live_count, total, allocations, frees, mean_life, location
    assert [r[:6] for r in rows(dom)] == [
        ["6.0 MiB", "75.0%", "1,536", "6.0 MiB", "1,536", "0"],
        ["1.5 MiB", "18.8%", "6,144", "10.0 MiB", "40,960", "34,816"],
        ["512.0 KiB", "6.3%", "512", "512.0 KiB", "512", "0"]]
    assert [r[7] for r in rows(dom)] == [f"{GEM}:42", f"{GEM}:97", "app/models/user.rb:12"]
    assert 'title="10,485,760 bytes">10.0 MiB</td>' in dom
    assert f'title="{GEM}:97"' in dom
    # nothing wider than the window: the long path wrapped
    width = int(re.search(r'data-page-width="(\d+)"', dom).group(1))
    right = int(re.search(r'data-table-right="(\d+)"', dom).group(1))
    assert width <= 1400 and right <= 1400, (width, right)

    measured = tmp / "report-measured.html"
    p = chromium(["--window-size=1400,900", "--dump-dom", f"file://{measured}#sort=location"], tmp)
    assert sorted_heads(p.stdout) == [("location", "ascending")]
    assert [r[7] for r in rows(p.stdout)][0] == f"{GEM}:42"
    p = chromium(["--window-size=1400,900", "--dump-dom", f"file://{measured}#sort=total"], tmp)
    assert sorted_heads(p.stdout) == [("total", "descending")]
    assert [r[7] for r in rows(p.stdout)][0] == f"{GEM}:97"

    shot = tmp / "report.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1400,900", f"file://{tmp / 'report.html'}"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 5000


# --stacks: the gem helper's line called from two application lines
APP_RB = "/srv/app/app/controllers/uploads_controller.rb"
HELPER_RB = "/srv/app/vendor/bundle/gems/gemlike-1.0/lib/gemlike/helper.rb"


def stack_site(stack, live):
    s = site(stack[0].split(" in ")[0], live, live, live // 1024, live // 1024)
    s["stack"] = stack
    return s


STACK_SITES = [
    stack_site([f"{HELPER_RB}:9 in remember", f"{APP_RB}:13 in handle_upload",
                f"{APP_RB}:40 in block in serve", f"{APP_RB}:38 in serve"], 6291456),
    stack_site([f"{HELPER_RB}:9 in remember", f"{APP_RB}:18 in handle_ping",
                f"{APP_RB}:41 in block in serve", f"{APP_RB}:38 in serve"], 629146),
    site("/lib/x86_64-linux-gnu/libz.so.1(+0x3a1c)[0x7f00aa003a1c]", 1048576, 1048576, 4, 4)]

def test_flame_graph_rooted_at_the_allocation(tmp):
    """The default view: each library line is rooted at its application
    caller (the helper is under vendor/bundle/gems), the lines holding
    memory on the top row, widest first, their callers beneath; a native
    site is a root of its own.  Hover: exact bytes, share, the library
    line it allocated in."""
    html, dom = page_in_chromium(tmp, "flame", STACK_SITES, FRAMES)
    assert "<h2>Live bytes by stack</h2>" in html and "<script src" not in html
    assert 'data-flame-view="alloc"' in dom
    frames = frames_of(dom)
    assert int(re.search(r'data-page-width="(\d+)"', dom).group(1)) <= 1400
    up = frames[f"{APP_RB}:13 in handle_upload"]
    ping = frames[f"{APP_RB}:18 in handle_ping"]
    libz = frames["/lib/x86_64-linux-gnu/libz.so.1(+0x3a1c)[0x7f00aa003a1c]"]
    # one top row: the uploads' caller, the native site, the pings'
    assert up[1] == ping[1] == libz[1]
    assert up[0] < libz[0] < ping[0]
    total = 6291456 + 629146 + 1048576
    assert abs(up[2] - 1200 * 6291456 / total) <= 1.5
    assert abs(up[2] / ping[2] - 10) < 0.5
    # beneath each, its own caller
    assert frames[f"{APP_RB}:40 in block in serve"][1] == up[1] + 18
    assert frames[f"{APP_RB}:41 in block in serve"][1] == up[1] + 18
    assert f"{HELPER_RB}:9 in remember" not in frames
    import html as htmllib
    text = htmllib.unescape(dom)
    assert f"{APP_RB}:13 in handle_upload: 6,291,456 bytes (78.9%); allocated in library code at " \
           f"{HELPER_RB}:9 (100%)" in text


def test_flame_graph_zooms_searches_and_toggles(tmp):
    _, dom = page_in_chromium(tmp, "zoom", STACK_SITES,
                              with_vars(FRAMES, CLICK=f"{APP_RB}:18 in handle_ping",
                                        SEARCH="block in serve"))
    before, zoomed, back = frames_of(dom), frames_of(dom, "zoomed"), frames_of(dom, "back")
    ping = f"{APP_RB}:18 in handle_ping"
    assert before[ping][2] < 200
    # zoomed: the pings' caller at full width, its callers beneath at full width too
    left = before[f"{APP_RB}:13 in handle_upload"][0]
    assert zoomed[ping][0] == left and zoomed[ping][1] == before[ping][1]
    assert zoomed[ping][2] >= 1198 and zoomed[f"{APP_RB}:41 in block in serve"][2] >= 1198
    assert f"{APP_RB}:13 in handle_upload" not in zoomed
    # a click on it again: back to the whole
    assert back == before
    # the search: both "block in serve" frames, their bytes once each
    import html as htmllib
    assert json.loads(htmllib.unescape(re.search(r'data-matched="([^"]*)"', dom).group(1))) == \
        [f"{APP_RB}:40 in block in serve", f"{APP_RB}:41 in block in serve"]
    assert "2 frames match: 6.6 MiB (6,920,602 bytes, 86.8%)" in htmllib.unescape(dom)

    # the outermost frame first, one radio button (or #flame=outer) away
    measured = tmp / "zoom-measured.html"
    p = chromium(["--window-size=1400,900", "--dump-dom", f"file://{measured}#flame=outer"], tmp)
    assert 'data-flame-view="outer"' in p.stdout
    frames = frames_of(p.stdout)
    top = frames[f"{APP_RB}:38 in serve"]
    up = frames[f"{APP_RB}:13 in handle_upload"]
    ping = frames[f"{APP_RB}:18 in handle_ping"]
    assert up[1] > top[1] and ping[1] == up[1]
    assert abs(up[2] / ping[2] - 10) < 0.5 and up[0] < ping[0]
    # the helper's frame is drawn under each caller, innermost at the bottom
    assert frames[f"{HELPER_RB}:9 in remember"][1] > up[1]
    # no stacks, no graph
    plain, _ = page_in_chromium(tmp, "plain", SITES, "</body>")
    assert 'id="flame"' not in plain

    shot = tmp / "flame.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1400,900", f"file://{tmp / 'zoom.html'}"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 5000
