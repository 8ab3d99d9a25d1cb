# SPDX-License-Identifier: MIT
"""A process that exits during the window (a batch job)
still gets its report, exit code 16, from the table it writes as it
exits; killed by a signal, from the window's last sample (partial); with
--keep its final dump goes where the attach said; among several
processes, one that exits has its section and the others go on.  No
runtime directory is left behind."""
import glob
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (ATTACH, LEAK_RB, ROOT, attach, helper_answered, is_attached, needs_ptrace,
                      parse_dump, parse_json_dump, sections, site_rows, start_leak)

EXITED = 16
LEAK = 20_000_000   # leak 2000 10000: 2,000 heap buffers of 10,000 bytes
# beside them the leak line grows the KEEP array (8 bytes a string, with
# its slack) and makes a few small first-call allocations
LEAK_SLACK = 64 * 1024


def no_runtime_dir(pid):
    return glob.glob(f"/tmp/mwrap.{pid}.*") == []


def window_on(pids, *args):
    """mwrap-attach -d 30 ARGS on PIDS, once each helper answered (the
    window is open): the running Popen."""
    p = subprocess.Popen([ATTACH, "-p", ",".join(map(str, pids)), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + 30
    while not all(helper_answered(pid) for pid in pids):
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            out, err = p.communicate(timeout=30)
            pytest.fail(f"the window never opened: {err}")
        time.sleep(0.02)
    return p


def finish(p, timeout=60):
    """The window's (returncode, stdout, stderr); never left running."""
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    return p.returncode, out, err


def leak_and_exit(t, seconds_after=1.0):
    """The target leaks LEAK bytes on its leak line, then ends (stdin
    closed: it prints "bye" and exits 0) SECONDS_AFTER later."""
    t.send("leak 2000 10000")
    t.expect("leaked")
    time.sleep(seconds_after)
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 19998000"]


@needs_ptrace
def test_batch_job_exiting_mid_window_gets_its_report(spawn):
    t, line, _ = start_leak(spawn)
    started = time.monotonic()
    p = window_on([t.pid], "-d", "30", "--format=json")
    leak_and_exit(t)
    rc, out, err = finish(p)
    took = time.monotonic() - started
    assert rc == EXITED, err
    assert took < 20, f"the report came {took:.1f} s after the start, not at the exit"
    assert re.search(rf"process {t.pid} exited \d+\.\d s into the window; "
                     r"the report is its table as it exited", err), err
    header, sites = parse_json_dump(out)
    assert header["pid"] == t.pid
    assert 0.5 < header["exited_after_seconds"] < 20
    assert "exit_partial_top" not in header
    site = sites[f"{LEAK_RB}:{line}"]
    assert LEAK <= site["live_bytes"] <= LEAK + LEAK_SLACK, site
    assert site["live_count"] >= 2000
    # the growth series so far, its last point the table at the exit
    series = json.loads(out.splitlines()[-1])
    assert series["type"] == "series" and len(series["t"]) >= 2
    assert series["t"][-1] == pytest.approx(header["exited_after_seconds"], abs=0.1)
    assert series["live_bytes"][-1] == header["tracked_live_bytes"]
    assert no_runtime_dir(t.pid)


@needs_ptrace
def test_killed_mid_window_gets_a_partial_report(spawn):
    """SIGKILL: nothing runs at exit; the report is the window's last
    sample (taken once a second: the leak is 3 s old when it dies)."""
    t, line, _ = start_leak(spawn)
    p = window_on([t.pid], "-d", "30")
    t.send("leak 2000 10000")
    t.expect("leaked")
    time.sleep(3)
    t.kill()
    rc, out, err = finish(p)
    assert rc == EXITED, err
    assert "without writing its table (killed by a signal?); the report is partial" in err
    assert re.search(r"^the process exited \d+\.\d s into the window without writing its table "
                     r"\(killed by a signal\?\): PARTIAL report, only the top 20 sites of the "
                     r"window's last sample \(\d+\.\d s in\)$", out, re.M), out
    row = next(l for l in out.splitlines() if l.endswith(f"{LEAK_RB}:{line}"))
    live = int(row.split()[0])
    assert LEAK <= live <= LEAK + LEAK_SLACK, row
    assert no_runtime_dir(t.pid)


@needs_ptrace
def test_gone_before_anything_was_collected_is_exit_11(spawn):
    """A process that allocated nothing in the window and was killed
    left no table and no sample with a site: no report, exit 11."""
    t = spawn(["sleep", "60"])
    p = window_on([t.pid], "-d", "30")
    time.sleep(0.5)
    t.kill()
    rc, out, err = finish(p)
    assert rc == 11, err
    assert out == ""
    assert f"process {t.pid} exited" in err and "before anything was collected" in err
    assert "run it under mwrap" in err
    assert no_runtime_dir(t.pid)


@needs_ptrace
def test_keep_leaves_its_final_dump_where_it_said_at_exit(spawn):
    t, line, _ = start_leak(spawn)
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    dump = re.search(r"\(to (/tmp/mwrap\.\d+\.\w+/dump) in the target's filesystem\)", p.stderr).group(1)
    d = os.path.dirname(dump)
    try:
        t.send("leak 100 5000")
        t.expect("leaked")
        rc, _, _ = t.finish()
        assert rc == 0
        total, calls = parse_dump(open(dump).read())[f"{LEAK_RB}:{line}"]
        assert calls >= 100 and total >= 500_000
        # as --detach leaves it: the dump alone
        assert os.listdir(d) == ["dump"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def live_of(lines, location):
    return int(next(l for l in site_rows(lines) if l.endswith(location)).split()[0])


@needs_ptrace
def test_one_of_several_exiting_has_its_section_the_others_go_on(spawn):
    """-p A,B: A exits 1 s after its leak, B's window runs its 6 s."""
    a, line, _ = start_leak(spawn)
    b, _, _ = start_leak(spawn)
    started = time.monotonic()
    p = window_on([a.pid, b.pid], "-d", "6", "-v")
    b.send("leak 50 20000")
    b.expect("leaked")
    leak_and_exit(a)
    rc, out, err = finish(p)
    assert rc == 0, err
    assert time.monotonic() - started >= 6
    assert f"[{a.pid}] mwrap-attach: process {a.pid} exited" in err
    assert f"[{b.pid}] mwrap-attach: detached" in err
    parts = sections(out)
    assert set(parts) == {f"process {a.pid}", f"process {b.pid}",
                          "merged view of 2 of 2 processes"}
    loc = f"{LEAK_RB}:{line}"
    assert any(l.startswith("the process exited") and l.endswith("this is its table as it exited")
               for l in parts[f"process {a.pid}"])
    assert not any("exited" in l for l in parts[f"process {b.pid}"])
    a_live = live_of(parts[f"process {a.pid}"], loc)
    b_live = live_of(parts[f"process {b.pid}"], loc)
    assert LEAK <= a_live <= LEAK + LEAK_SLACK
    assert 1_000_000 <= b_live <= 1_000_000 + LEAK_SLACK
    assert live_of(parts["merged view of 2 of 2 processes"], loc) == a_live + b_live
    assert no_runtime_dir(a.pid)
    assert not is_attached(b.pid)
    assert b.finish()[0] == 0


def test_the_exited_exit_code_is_documented():
    assert "16  the process exited during the window: the report covers" in \
        attach(["--help"]).stdout
    with open(os.path.join(ROOT, "man", "mwrap-attach.1")) as f:
        assert "\n.TP\n16\nthe process exited during the window" in f.read()
