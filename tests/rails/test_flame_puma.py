# SPDX-License-Identifier: MIT
"""The HTML report's flame graph of a Puma app (make test-rails):
tests/rails/flame_app, a Rack app under Debian's Puma in single mode
(4 threads), whose /upload and /ping routes each call one gem-like
helper (tests/targets/gemlike/helper.rb) from their own line, is driven
over one keep-alive connection at 3 uploads to 1 ping during a default
window (stacks sampled about once per 64 KiB), with --focus on the
tests' tree: the helper lies outside the app's directory, Puma's working
directory, so by default it would be named by the routes that call it
(as a gem's line is); focused, it is the application's.  In headless Chromium
the helper's line is the widest box on the top row, the two routes'
lines beneath it in their ratio; a click on the ping's line zooms it to
the full width.  The screenshots are saved as build/flame-graph-puma.png
and build/flame-graph-puma-zoomed.png."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from conftest import (CHROMIUM, ROOT, attach_during, check_flame_rooted_at,  # noqa: E402
                      ptrace_allowed)
from load import get_each  # noqa: E402
from server import line_of, puma_missing, puma_serving  # noqa: E402

APP = os.path.join(os.path.dirname(__file__), "flame_app")
ROUTES = os.path.join(APP, "app.rb")
HELPER = os.path.join(ROOT, "tests", "targets", "gemlike", "helper.rb")

pytestmark = [
    pytest.mark.skipif(puma_missing() is not None, reason=str(puma_missing())),
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed"),
    pytest.mark.skipif(ptrace_allowed() is not None, reason=f"ptrace not permitted: {ptrace_allowed()}"),
]

# as in tests/test_flame.py: 100 rounds of 3 uploads and 1 ping, 256 KiB
# each (each kept string's stack recorded with p = 0.98; the ratio of the
# estimates deviates by about 2%, the tolerance is seven of those)
ROUNDS, SIZE, UPLOADS, PINGS = 100, 262_144, 3, 1
TOLERANCE = 0.15


def test_flame_graph_of_a_puma_app_is_rooted_at_the_helper(tmp):
    upload = line_of(ROUTES, "# the upload's line")
    ping = line_of(ROUTES, "# the ping's line")
    keep = line_of(HELPER, "STORE << ")
    page = tmp / "flame.html"
    with puma_serving(APP) as (pid, port):
        answers = []

        def serve(_):
            paths = ([f"/upload?size={SIZE}"] * UPLOADS + [f"/ping?size={SIZE}"] * PINGS) * ROUNDS
            answers.extend(get_each(port, paths))
        code, _, err = attach_during([pid], ["--format=html", "-o", str(page),
                                             "--focus", os.path.join(ROOT, "tests") + "/"],
                                     serve, interrupt=True)
        assert code == 0, err
        assert answers == [(200, b"ok\n")] * ((UPLOADS + PINGS) * ROUNDS)
        # every string the helper kept, and Puma served on after the window
        assert get_each(port, ["/count"]) == [(200, str((UPLOADS + PINGS) * ROUNDS).encode())]
    check_flame_rooted_at(page, tmp, f"{HELPER}:{keep}", (f"{ROUTES}:{upload}", f"{ROUTES}:{ping}"),
                          UPLOADS / PINGS, TOLERANCE, "flame-graph-puma")
