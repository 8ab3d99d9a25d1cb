# SPDX-License-Identifier: MIT
"""An HTML report's flame graph as headless Chromium draws it: its
frames measured in the page, clicked and searched."""
import html
import json
import os
import re

from lib.paths import ROOT
from lib.probes import CHROMIUM
from lib.procs import run


def chromium(args, tmp):
    """Debian's chromium, headless, with its profile in tmp and nothing
    fetched from the network; a fixed layout (no scrollbars)."""
    return run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                f"--user-data-dir={tmp / 'chrome-profile'}"] + args, timeout=120)


# Inserted into an HTML report (before </body>): each drawn frame of its
# flame graph as [title, left, top, width, class] in data-frames; with
# window.CLICK (a title's start; window.DEPTH: on that row) set, the frames
# after a click on that frame in data-zoomed and, unless window.STAY,
# after a second click on it (back out) in data-back; with window.SEARCH,
# the search's words in data-found and the highlighted frames in
# data-matched.
FLAME_FRAMES = """<script>
function frames() {
  var out = [];
  document.querySelectorAll("#flame g.frame").forEach(function (g) {
    var r = g.querySelector("rect").getBoundingClientRect();
    out.push([g.querySelector("title").textContent, Math.round(r.left), Math.round(r.top),
              Math.round(r.width), g.getAttribute("class")]);
  });
  return out;
}
document.body.dataset.frames = JSON.stringify(frames());
if (window.CLICK) {
  var g = Array.prototype.find.call(document.querySelectorAll("#flame g.frame"), function (g) {
    return g.querySelector("title").textContent.indexOf(window.CLICK) === 0 &&
      (window.DEPTH === undefined || g.getAttribute("data-depth") === String(window.DEPTH));
  });
  g.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  document.body.dataset.zoomed = JSON.stringify(frames());
  if (!window.STAY) {
    g = document.querySelector("#flame g.zoomed");
    g.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
    document.body.dataset.back = JSON.stringify(frames());
  }
}
if (window.SEARCH) {
  var box = document.getElementById("flame-search");
  box.value = window.SEARCH;
  box.dispatchEvent(new Event("input"));
  document.body.dataset.found = document.getElementById("flame-found").textContent;
  document.body.dataset.matched = JSON.stringify(frames().filter(function (f) {
    return / match/.test(f[4]); }).map(function (f) { return f[0].split(": ")[0]; }));
}
document.body.dataset.pageWidth = document.documentElement.scrollWidth;
</script></body>"""


def flame_frames(dom, attr="frames"):
    """The frames listed in the DOM's data-ATTR (FLAME_FRAMES):
    {name: (left, top, width)}; a name drawn twice keeps its first."""
    m = re.search(f'data-{attr}="([^"]*)"', dom)
    out = {}
    for t, x, y, w, _ in json.loads(html.unescape(m.group(1))):
        out.setdefault(t.split(": ")[0], (x, y, w))
    return out


def with_vars(script, **kw):
    """SCRIPT after a <script> setting window's KW."""
    return "<script>" + "".join(f"window.{k} = {json.dumps(v)};" for k, v in kw.items()) + \
        "</script>" + script


def by_location(frames, location):
    """The frames drawn for LOCATION ("path:line"): [(left, top, width)]."""
    return [v for k, v in frames.items() if k.startswith(f"{location} in ")]


FLAME_ROW, FLAME_WIDTH = 18, 1200   # scripts/lib/mwrap_flame_html.rb's ROW, WIDTH


def check_flame_rooted_at(page, tmp, helper, callers, ratio, tolerance, shots):
    """PAGE (an HTML report) in headless Chromium: the flame graph's top
    row has HELPER ("path:line") as its widest box, and beneath it exactly
    CALLERS (two "path:line") side by side, the first at its left, their
    widths at RATIO within TOLERANCE (relative), filling at least 95% of
    it; a click on the second caller zooms it to the full width with the
    helper above it and the first caller gone.  The page and screenshots
    of it (1400x1000) before and after the click are saved as
    build/SHOTS.html, build/SHOTS.png and build/SHOTS-zoomed.png (each
    screenshot over 10 KB)."""
    first, second = callers
    html = page.read_text()
    measured = tmp / "flame-measured.html"
    measured.write_text(html.replace("</body>", with_vars(FLAME_FRAMES, CLICK=f"{second} in ",
                                                          DEPTH=1, STAY=True)))
    p = chromium(["--window-size=1400,1400", "--dump-dom", f"file://{measured}"], tmp)
    assert p.returncode == 0, p.stderr
    assert 'data-flame-view="alloc"' in p.stdout
    frames = flame_frames(p.stdout)

    # the top row: the helper's line, the widest box, at the left
    top_box = by_location(frames, helper)
    assert len(top_box) == 1, frames
    left, top, width = top_box[0]
    assert all(y >= top for _, y, _ in frames.values())
    assert all(w <= width for _, y, w in frames.values() if y == top), frames
    # beneath it exactly its two callers, side by side, in their ratio
    row = top + FLAME_ROW
    under = {k: v for k, v in frames.items() if v[1] == row and left <= v[0] < left + width}
    a = by_location(under, first)
    b = by_location(under, second)
    assert len(a) == 1 and len(b) == 1 and len(under) == 2, under
    (ax, _, aw), (bx, _, bw) = a[0], b[0]
    print(f"flame graph: helper {width} px wide, callers {aw} and {bw} px ({aw / bw:.2f}:1)")
    assert ax == left and bx >= ax + aw - 1
    assert abs(aw / bw / ratio - 1) <= tolerance, (aw, bw)
    # the two callers fill the helper's box (its own array's growth
    # aside: at most a few percent)
    assert aw + bw >= 0.95 * width, (aw, bw, width)

    # a click on the second caller: it fills the width, the helper above it
    zoomed = flame_frames(p.stdout, "zoomed")
    z = [f for f in by_location(zoomed, second) if f[1] == row]
    assert len(z) == 1 and z[0][0] == left and z[0][2] >= FLAME_WIDTH - 2, zoomed
    assert by_location(zoomed, helper)[0][2] >= FLAME_WIDTH - 2
    assert not by_location(zoomed, first)
    assert f'data-flame-zoom="{second} in ' in p.stdout

    # the screenshots, kept in build/ beside the page
    build = os.path.join(ROOT, "build")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, f"{shots}.html"), "w") as f:
        f.write(html)
    # the page after the click: the measuring script clicked and stayed
    for shot, source in ((f"{shots}.png", page), (f"{shots}-zoomed.png", measured)):
        shot = os.path.join(build, shot)
        p = chromium([f"--screenshot={shot}", "--window-size=1400,1000", f"file://{source}"], tmp)
        assert p.returncode == 0 and os.path.getsize(shot) > 10_000, p.stderr
