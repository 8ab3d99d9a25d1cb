# SPDX-License-Identifier: MIT
"""The answer without expert flags, on Debian's Rails under a Puma
cluster (make test-rails): a controller keeps the JSON of every order
(the leak) while rendering the same payload makes the same innermost
JSON line as garbage.  With no flag but the window and --children-of,
under keep-alive load, the controller's leak line is the first source
line the report names (the application's lines come first, ranked by
what they hold), the render line below it, and the JSON line's row in
the site table names it as its caller; no request fails and both
workers live on."""
import itertools
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from conftest import ATTACH, first_source_line, ptrace_allowed  # noqa: E402
from load import Load  # noqa: E402
from server import line_of, puma_missing, puma_serving, workers_of  # noqa: E402

APP = os.path.join(os.path.dirname(__file__), "app")
CONTROLLER = os.path.join(APP, "app", "controllers", "orders_controller.rb")


def rails_missing():
    if puma_missing() is not None:
        return puma_missing()
    p = subprocess.run(["ruby", "-e", 'require "action_controller/railtie"'],
                       capture_output=True, timeout=60)
    return None if p.returncode == 0 else "Rails is not installed (scripts/install-deps rails)"


pytestmark = [
    pytest.mark.skipif(rails_missing() is not None, reason=str(rails_missing())),
    pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted"),
]


@pytest.fixture
def puma():
    """A Puma cluster of 2 workers x 4 threads serving the app: (master
    pid, port, worker pids); stopped afterwards."""
    with puma_serving(APP, workers=2) as (pid, port):
        yield pid, port, workers_of(pid)


def test_the_controller_is_named_without_flags(puma):
    master, port, workers = puma
    leak = line_of(CONTROLLER, "AUDIT << JSON.generate")
    render = line_of(CONTROLLER, "render json: order")
    load = Load(port, threads=4)
    load.start()
    try:
        time.sleep(1)
        before = load.rate(4)
        p = subprocess.Popen([ATTACH, "--children-of", str(master), "-d", "8"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2)
            during = load.rate(5)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    finally:
        load.finish()
    print(f"throughput {before:.0f}/s before, {during:.0f}/s during the window "
          f"({during / before:.2f}x); {load.ok} responses")
    assert p.returncode == 0, err
    assert load.errors == [], load.errors[:5]
    assert workers_of(master) == workers, "a worker was lost"
    print("\n".join(out.splitlines()[:15]))
    assert first_source_line(out) == f"{CONTROLLER}:{leak}", out
    lines = out.splitlines()
    first = next(i for i, l in enumerate(lines) if l.endswith(f"{CONTROLLER}:{leak}"))
    # under it: which workers hold it, and the JSON line it allocates in
    under = list(itertools.takewhile(lambda l: l.startswith(" " * 20), lines[first + 1:]))
    assert any(re.search(r"allocating in /\S+/json/common\.rb:\d+ \(", l) for l in under), under
    assert any(re.match(r" +in [12] of 2 processes: ", l) for l in under), under
    rendered = [i for i, l in enumerate(lines) if f"{CONTROLLER}:{render}" in l]
    assert all(i > first for i in rendered), out
    # the site table: the JSON line's row names the controller as a caller
    assert any(f"called from {CONTROLLER}:{leak} (" in l for l in lines), out
