# SPDX-License-Identifier: MIT
"""On real attaches: the status line (plain lines when stderr is
not a terminal), --watch, and many processes at once (-p PID1,PID2,
--children-of MASTER) with per-process and merged reports."""
import os
import signal
import time

import pytest

from conftest import (ROOT, attach, attach_during, our_files, ptrace_allowed, remove,
                      proc_stat, sections, site_value, start_ready)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=f"ptrace not permitted: {ptrace_allowed()}")

WORKERS_RB = os.path.join(ROOT, "tests", "targets", "workers.rb")


@pytest.fixture
def workers(spawn):
    """A master with two forked workers; the workers are killed at
    teardown (the fixture kills only what it started)."""
    t, fields = start_ready(spawn, ["ruby", WORKERS_RB, "2"])
    pids = [int(p) for p in fields["workers"].split(",")]
    yield t, pids, f"{WORKERS_RB}:{fields['work_line']}"
    for pid in pids:
        left = our_files(pid)   # a worker killed while attached keeps its
        try:                    # runtime directory
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for path in left:
            remove(path)


def live_count(lines, location):
    return site_value(lines, location, "live_count")


def test_children_of_reports_each_worker_and_the_merge(workers):
    master, pids, line = workers
    p = attach(["--children-of", str(master.pid), "-d", "2", "-v"], timeout=90)
    assert p.returncode == 0, p.stderr
    parts = sections(p.stdout)
    assert set(parts) == {f"process {pids[0]}", f"process {pids[1]}",
                          "merged view of 2 of 2 processes"}
    counts = [live_count(parts[f"process {pid}"], line) for pid in pids]
    assert all(c >= 100 for c in counts), counts
    merged = live_count(parts["merged view of 2 of 2 processes"], line)
    assert merged == sum(counts)
    # messages of each run are prefixed with its pid
    for pid in pids:
        assert f"[{pid}] mwrap-attach: attached to {pid}" in p.stderr
        assert f"[{pid}] mwrap-attach: detached" in p.stderr


def test_a_worker_killed_mid_window_is_reported_not_fatal(workers):
    """A worker SIGKILLed mid-window runs nothing at exit: its section is
    the window's last sample (tests/test_exit_window.py has the rest)."""
    _, pids, line = workers

    def kill_a_worker(_):
        time.sleep(2.5)     # the window samples once a second
        os.kill(pids[1], signal.SIGKILL)
    code, out, err = attach_during(pids, ["-d", "5", "-v"], kill_a_worker)
    assert code == 0, err
    assert f"[{pids[1]}] mwrap-attach: process {pids[1]} exited" in err
    parts = sections(out)
    assert any("PARTIAL report" in l for l in parts[f"process {pids[1]}"])
    assert live_count(parts[f"process {pids[1]}"], line) >= 100
    assert live_count(parts["merged view of 2 of 2 processes"], line) >= 200


def run_for(parent, pid):
    """The per-process mwrap-attach run PARENT started for PID, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(proc_stat(entry)[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"-p" in argv and argv[argv.index(b"-p") + 1] == str(pid).encode():
            return int(entry)
    return None


def test_a_run_killed_by_a_signal_exits_with_the_tables_code(workers):
    """The run for one process dies of SIGKILL: the other's report is made,
    the dead run is named with its signal and the table's code (1)."""
    _, pids, line = workers

    def kill_its_run(proc):
        run = run_for(proc.pid, pids[1])
        assert run, "no per-process run found"
        os.kill(run, signal.SIGKILL)
    code, out, err = attach_during(pids, ["-d", "4", "-v"], kill_its_run)
    assert code == 0, err
    assert (f"process {pids[1]}: no report (exit 1: its mwrap-attach died of "
            f"signal {signal.SIGKILL.value})") in err
    parts = sections(out)
    assert live_count(parts[f"process {pids[0]}"], line) >= 100


def test_pid_lists_are_checked_before_attaching(spawn):
    p = attach(["-p", "12,x"])
    assert p.returncode == 2 and "bad pid" in p.stderr
    p = attach(["-p", "1,2", "--dump"])
    assert p.returncode == 2 and "take one pid" in p.stderr
    p = attach(["-p", "1,2", "--watch"])
    assert p.returncode == 2 and "--watch takes one pid" in p.stderr
    p = attach(["--children-of", str(os.getpid()), "-p", "3"])
    assert p.returncode == 2
    # a process without children
    lonely = spawn(["sleep", "60"])
    p = attach(["--children-of", str(lonely.pid), "-d", "1"])
    assert p.returncode == 3 and "has no child processes" in p.stderr


def test_status_lines_name_the_top_site_when_not_a_terminal(workers):
    _, pids, line = workers
    p = attach(["-p", str(pids[0]), "-d", "2"], timeout=60)
    assert p.returncode == 0, p.stderr
    status = [l for l in p.stderr.splitlines() if l.startswith("[mwrap-attach]")]
    # one at the start, one at the end (every 5 s between)
    assert len(status) >= 2
    assert "\r" not in p.stderr
    assert "top: " in status[-1] and status[-1].endswith(line)
    assert "allocs/s" in status[-1] and "2s/2s" in status[-1]


def test_watch_prints_the_top_sites(workers):
    _, pids, line = workers
    p = attach(["-p", str(pids[0]), "-d", "2", "--watch"], timeout=60)
    assert p.returncode == 0, p.stderr
    assert "sites by live bytes, " in p.stderr and " s into the window (Ctrl-C ends):" in p.stderr
    tables = p.stderr.split("[mwrap-attach]")
    assert any(line in t for t in tables[-1:])
    # each row fits 100 columns (not a terminal: the default width)
    rows = [l for l in tables[-1].splitlines() if "%" in l]
    assert rows and all(len(r) <= 100 for r in rows), rows
