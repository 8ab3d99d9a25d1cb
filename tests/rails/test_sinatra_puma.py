# SPDX-License-Identifier: MIT
"""The answer without expert flags, on Debian's Sinatra under a Puma
cluster (make test-rails): tests/rails/sinatra_app's POST /orders keeps
the JSON of every order (the leak) while POST /quotes renders the same
kind of payload, three times as often, and drops it: garbage made on the
same innermost JSON line (json/common.rb).  With no flag but the window
and --children-of, under keep-alive load, the leak line is the first
source line the report names, the quote's line (if named) below it; no
request fails and both workers live on."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from conftest import ATTACH, first_source_line, ptrace_allowed  # noqa: E402
from load import Load  # noqa: E402
from server import line_of, puma_missing, puma_serving, workers_of  # noqa: E402

APP = os.path.join(os.path.dirname(__file__), "sinatra_app")
ROUTES = os.path.join(APP, "app.rb")
QUOTES_PER_ORDER = 3


def sinatra_missing():
    if puma_missing() is not None:
        return puma_missing()
    p = subprocess.run(["ruby", "-e", 'require "sinatra/base"'],
                       capture_output=True, timeout=60)
    return None if p.returncode == 0 else "Sinatra is not installed (scripts/install-deps rails)"


pytestmark = [
    pytest.mark.skipif(sinatra_missing() is not None, reason=str(sinatra_missing())),
    pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted"),
]


def mix(i):
    """QUOTES_PER_ORDER quotes (garbage) to one order (kept), in turn:
    mostly garbage, so that the leak must be told from it by what it
    holds, not by what it makes."""
    return "/orders" if i % (QUOTES_PER_ORDER + 1) == 0 else "/quotes"


@pytest.fixture
def puma():
    """A Puma cluster of 2 workers x 4 threads serving the app: (master
    pid, port, worker pids); stopped afterwards."""
    with puma_serving(APP, workers=2) as (pid, port):
        yield pid, port, workers_of(pid)


def test_the_sinatra_leak_is_named_without_flags(puma):
    master, port, workers = puma
    leak = line_of(ROUTES, "AUDIT << JSON.generate")
    quote = line_of(ROUTES, "body JSON.generate")
    load = Load(port, threads=4, route=mix)
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
    print("\n".join(out.splitlines()[:15]))
    assert p.returncode == 0, err
    assert load.errors == [], load.errors[:5]
    assert workers_of(master) == workers, "a worker was lost"
    assert first_source_line(out) == f"{ROUTES}:{leak}", out
    lines = out.splitlines()
    first = next(i for i, l in enumerate(lines) if f"{ROUTES}:{leak}" in l)
    quoted = [i for i, l in enumerate(lines) if f"{ROUTES}:{quote}" in l]
    assert all(i > first for i in quoted), out
