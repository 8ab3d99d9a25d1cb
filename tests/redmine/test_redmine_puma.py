# SPDX-License-Identifier: MIT
"""On an application nobody here wrote (make test-redmine):
Debian's Redmine under a Puma cluster of 2 workers x 4 threads, with
keep-alive load, and a plugin of ours that keeps the JSON.generate of
every issue shown (the leak) while Redmine's own API rendering makes the
same innermost JSON line as garbage.  Attached with --children-of and no
other flag, the report's first source line is the plugin's leak line;
no request fails, both workers live on.  With the plugin's bounded cache
on beside it, that cache's line ranks below the leak; the default pprof
names the leak line in `go tool pprof -top`.  Each test prints the
report's first 15 lines and the throughput before and during the
window (-s)."""
import os
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from conftest import ATTACH, first_source_line, helper_answered, ptrace_allowed, run, \
    scaled  # noqa: E402
from redmine_load import RedmineLoad  # noqa: E402
from redmine_server import INSTALLED, LEAK_RB, PLUGIN, failed_requests, prepare, \
    redmine_missing, redmine_serving  # noqa: E402
from load import get_each  # noqa: E402  (tests/rails's, on redmine_server's path)
from server import line_of, workers_of  # noqa: E402

pytestmark = [
    pytest.mark.skipif(redmine_missing() is not None, reason=str(redmine_missing())),
    pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted"),
]

SOURCE = os.path.join(PLUGIN, LEAK_RB)
LEAK = f"{INSTALLED}/{LEAK_RB}:{line_of(SOURCE, 'SHOWN[request.url] = JSON.generate')}"
BOUNDED = f"{INSTALLED}/{LEAK_RB}:{line_of(SOURCE, 'RECENT[request.url] = JSON.generate')}"
# The bounded cache's entries: about 7 s of this load's requests in a
# worker (about 30/s each, 2 CPUs), so that it is full before the window
# and, its entries replaced within it, holds about what the leak gains
BOUNDED_ENTRIES = 200
# Long enough for the leak (some 25 KiB/s a worker) to outgrow what a
# warming application takes once and keeps: a sqlite connection first
# used in the window fills its page cache (one held 588 KiB), one
# request's 256 KiB buffer
WINDOW = 30
# The leak ranks above the full cache once it gained more in the window
# than the cache holds (which is at most what the cache replaced in it):
# its window is long enough for LEAK_OVER_CACHE times that at the load's
# own rate (a loaded CPU, as beside the arm64 VM, served a third of it)
LEAK_OVER_CACHE = 2.5
MAX_WINDOW = 60


@pytest.fixture(scope="module")
def seed():
    return prepare()


def report_line(text, location):
    """The number of TEXT's first line naming LOCATION, or None."""
    return next((i for i, l in enumerate(text.splitlines(), 1) if location in l), None)


def window_for(bounded, rate):
    """The window (s): WINDOW, or with a BOUNDED cache what it takes the
    leak to outgrow it at RATE (requests/s, both workers) by
    LEAK_OVER_CACHE, up to MAX_WINDOW."""
    if not bounded:
        return WINDOW
    return min(MAX_WINDOW, max(WINDOW, round(LEAK_OVER_CACHE * bounded / (rate / 2))))


def attached_window(tmp, seed, args=(), bounded=0):
    """Redmine served under load, its rate taken, then mwrap-attach
    --children-of MASTER -d WINDOW ARGS (window_for), the rate taken again
    once both workers' helpers answered: (its stdout, what the plugin
    holds in one worker: /health's fields).  Asserts what every attach
    must keep: rc 0, no failed request, the same workers, a plugin that
    ran."""
    with redmine_serving(tmp, bounded=bounded) as (master, port, workers):
        load = RedmineLoad(port, seed)
        load.start()
        try:
            time.sleep(scaled(5))       # each worker's first pages compile templates
            before = load.rate(scaled(5))
            window = window_for(bounded, before)
            p = subprocess.Popen([ATTACH, "--children-of", str(master), "-d", str(window)]
                                 + list(args), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + scaled(30)
                while not all(map(helper_answered, workers)) and p.poll() is None and \
                        time.monotonic() < deadline:
                    time.sleep(0.05)
                during = load.rate(scaled(window / 2))
                out, err = p.communicate(timeout=scaled(180))
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            # what the plugin holds in one worker: proof it ran
            (status, body), = get_each(port, ["/health?_=after"])
        finally:
            load.finish()
        print(f"\nthroughput {before:.1f}/s before, {during:.1f}/s during the {window} s window "
              f"({during / before:.2f}x); {load.ok} responses; "
              f"a worker's plugin: {body.decode().strip()}")
        print("\n".join(out.splitlines()[:15]))
        (tmp / "report.txt").write_text(out)      # the whole of it, to look at
        assert p.returncode == 0, err
        assert load.errors == [], f"{load.errors[:5]}\nRedmine's log:\n{failed_requests()}"
        assert workers_of(master) == workers, "a worker was lost"
        assert status == 200, body
        held = dict(w.split("=") for w in body.decode().split() if "=" in w)
        assert int(held["shown"]) > 0, body
        return out, {k: int(v) for k, v in held.items()}


def test_the_leak_line_comes_first(tmp, seed):
    out, _ = attached_window(tmp, seed)
    assert first_source_line(out) == LEAK, f"the leak is on report line {report_line(out, LEAK)}"


def test_a_bounded_cache_ranks_below_the_leak(tmp, seed):
    out, held = attached_window(tmp, seed, bounded=BOUNDED_ENTRIES)
    assert held["recent"] == BOUNDED_ENTRIES, "the bounded cache never filled"
    print(f"report lines: the leak's {report_line(out, LEAK)}, "
          f"the bounded cache's {report_line(out, BOUNDED)}")
    # the leak first: the bounded cache's line, whatever it holds, below it
    assert first_source_line(out) == LEAK, f"the leak is on report line {report_line(out, LEAK)}"


@pytest.mark.skipif(shutil.which("go") is None,
                    reason="go not installed (scripts/install-deps installs golang-go)")
def test_pprof_names_the_leak_line(tmp, seed):
    profile = tmp / "redmine.pb.gz"
    attached_window(tmp, seed, ["--format=pprof", "-o", str(profile)])
    # as a user would: its default node fraction drops what holds little
    p = run(["go", "tool", "pprof", "-top", str(profile)], cwd=tmp, timeout=120,
            env={"HOME": str(tmp), "PPROF_TMPDIR": str(tmp), "GOTOOLCHAIN": "local"})
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    print("\n".join(rows[:15] + [f"row {i}: {r}" for i, r in enumerate(rows) if LEAK in r]))
    assert any(LEAK in r for r in rows), f"{LEAK} not in go tool pprof -top"
