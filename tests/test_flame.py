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

from conftest import (CHROMIUM, ROOT, attach_during, check_flame_rooted_at, ptrace_allowed,
                      start_ready)

APP = os.path.join(ROOT, "tests", "targets", "stacks_app.rb")
HELPER = os.path.join(ROOT, "tests", "targets", "gemlike", "helper.rb")

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


def test_flame_graph_of_a_live_service_is_rooted_at_the_helper(spawn, tmp):
    page = tmp / "flame.html"
    upload, ping, keep = window_html(spawn, page)
    check_flame_rooted_at(page, tmp, f"{HELPER}:{keep}", (f"{APP}:{upload}", f"{APP}:{ping}"),
                          UPLOADS / PINGS, TOLERANCE, "flame-graph")
