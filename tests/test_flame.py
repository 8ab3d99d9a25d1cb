# SPDX-License-Identifier: MIT
"""The HTML report's flame graph of a live service, in headless
Chromium: tests/targets/stacks_app.rb's helper (gemlike/helper.rb, a
separate file of the application's) called from two application lines
at 3:1, attached with the default window (stacks sampled about once per
64 KiB).  The helper's line is the widest box on the top row, its two
callers beneath it in their ratio; a click on one zooms it to the full
width.  The screenshots are saved as build/flame-graph.png and
build/flame-graph-zoomed.png."""
import os

import pytest

from conftest import (CHROMIUM, FLAME_FRAMES, ROOT, attach_during, chromium, flame_frames,
                      ptrace_allowed, start_ready, with_vars)

APP = os.path.join(ROOT, "tests", "targets", "stacks_app.rb")
HELPER = os.path.join(ROOT, "tests", "targets", "gemlike", "helper.rb")
BUILD = os.path.join(ROOT, "build")

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed"),
    pytest.mark.skipif(ptrace_allowed() is not None, reason=f"ptrace not permitted: {ptrace_allowed()}"),
]

# 100 rounds of 3 uploads and 1 ping, 256 KiB each: each kept string's
# stack is recorded with p = 1 - exp(-4) = 0.98, so the estimates of the
# 300 and 100 strings deviate by about 1% and 1.5% (their ratio by 2%:
# 15% is seven of those; at 128 KiB, 2.88 to 3.28 in five runs).
ROUNDS, SIZE, UPLOADS, PINGS = 100, 262_144, 3, 1
TOLERANCE = 0.15


def window_html(spawn, page):
    """The default window (-d 30, ended by Ctrl-C once the app served)
    as an HTML report in PAGE: (upload line, ping line, keep line)."""
    t, f = start_ready(spawn, ["ruby", APP])

    def serve(_):
        t.send(f"serve {ROUNDS} {SIZE} {UPLOADS} {PINGS}")
        t.expect("served", timeout=60)
    code, _, err = attach_during([t.pid], ["--format=html", "-o", str(page)], serve,
                                 interrupt=True)
    assert code == 0, err
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == [f"bye {(UPLOADS + PINGS) * ROUNDS}"]
    return int(f["upload_line"]), int(f["ping_line"]), int(f["keep_line"])


def by_location(frames, location):
    """The frames drawn for LOCATION ("path:line"): [(left, top, width)]."""
    return [v for k, v in frames.items() if k.startswith(f"{location} in ")]


def test_flame_graph_of_a_live_service_is_rooted_at_the_helper(spawn, tmp):
    page = tmp / "flame.html"
    upload, ping, keep = window_html(spawn, page)
    measured = tmp / "flame-measured.html"
    html = page.read_text()
    measured.write_text(html.replace("</body>", with_vars(FLAME_FRAMES, CLICK=f"{APP}:{ping} in ",
                                                          DEPTH=1, STAY=True)))
    p = chromium(["--window-size=1400,1400", "--dump-dom", f"file://{measured}"], tmp)
    assert p.returncode == 0, p.stderr
    assert 'data-flame-view="alloc"' in p.stdout
    frames = flame_frames(p.stdout)

    # the top row: the helper's line, the widest box, at the left
    helper = by_location(frames, f"{HELPER}:{keep}")
    assert len(helper) == 1, frames
    left, top, width = helper[0]
    assert all(y >= top for _, y, _ in frames.values())
    assert all(w <= width for _, y, w in frames.values() if y == top)
    # beneath it its two callers, side by side, in their ratio (3:1)
    up = by_location(frames, f"{APP}:{upload}")
    pi = by_location(frames, f"{APP}:{ping}")
    row = top + 18
    up = [f for f in up if f[1] == row]
    pi = [f for f in pi if f[1] == row]
    assert len(up) == 1 and len(pi) == 1, frames
    (ux, _, uw), (px, _, pw) = up[0], pi[0]
    assert ux == left and px >= ux + uw - 1
    ratio = uw / pw
    assert abs(ratio / (UPLOADS / PINGS) - 1) <= TOLERANCE, (uw, pw)
    # the two callers fill the helper's box (its own array's growth
    # aside: at most a few percent)
    assert uw + pw >= 0.95 * width, (uw, pw, width)

    # a click on the pings' line: it fills the width, the helper above it
    zoomed = flame_frames(p.stdout, "zoomed")
    z = [f for f in by_location(zoomed, f"{APP}:{ping}") if f[1] == row]
    assert len(z) == 1 and z[0][0] == left and z[0][2] >= 1198, zoomed
    assert by_location(zoomed, f"{HELPER}:{keep}")[0][2] >= 1198
    assert not by_location(zoomed, f"{APP}:{upload}")
    assert f'data-flame-zoom="{APP}:{ping} in ' in p.stdout

    # the screenshots, kept in build/ beside the page
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, "flame-graph.html"), "w") as f:
        f.write(html)
    shot = os.path.join(BUILD, "flame-graph.png")
    p = chromium([f"--screenshot={shot}", "--window-size=1400,1000", f"file://{page}"], tmp)
    assert p.returncode == 0 and os.path.getsize(shot) > 10_000, p.stderr
    # the page after the click (the measuring script clicked and stayed)
    shot = os.path.join(BUILD, "flame-graph-zoomed.png")
    p = chromium([f"--screenshot={shot}", "--window-size=1400,1000", f"file://{measured}"], tmp)
    assert p.returncode == 0 and os.path.getsize(shot) > 10_000, p.stderr
