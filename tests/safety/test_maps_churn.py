# SPDX-License-Identifier: MIT
"""Attaching to a process whose memory map never holds still.

The kernel hands /proc/PID/maps out a page per read(), looking at the
memory map afresh each time, so one pass over the file of a process that
maps and unmaps memory all the time is no snapshot.  The injector reads
it to find libc and the code where a thread may not be hijacked before
its call, and our library after dlopen (the gdb backend's after-check:
"gdb did not complete the call" when it was not found).  The target,
tests/targets/mapchurn.c, keeps four threads replacing mappings of 4 KiB
to 64 MiB and splitting them with mprotect, several hundred lines of
maps changing all over its address space.

- mwrap-inject loads the library and calls mw_attach, then mw_detach,
  ROUNDS times with each backend: every call succeeds, the target is
  left untraced each time and is untouched at the end (its own check of
  its mappings' bytes, no SIGINT, exit 0).
- A few whole attaches through mwrap-attach (a 0.1 s window: attach,
  report, detach) with each backend.
"""
import errno
import os
import time

import pytest

from conftest import (TARGETS, attach, inject, ptrace_allowed, skip_unless_gdb_works,
                      untraced_within)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
MAPCHURN = os.path.join(TARGETS, "mapchurn")
ROUNDS = 50
FRONT_END_ROUNDS = 3
# the rounds that must fit in the 150 s (a loaded machine gets fewer than
# ROUNDS: 45 with gdb at load 11)
MIN_ROUNDS = 10
BACKENDS = ["ptrace", "gdb"]



def start_churn(spawn, backend):
    """mapchurn with four churning threads, once ready."""
    if backend == "gdb":
        skip_unless_gdb_works()
    t = spawn([MAPCHURN, "4"])
    t.expect("ready")
    return t


def inject_outcome(pid, backend, fn):
    """mwrap-inject's call of FN("") in our library: its result, or
    the exit code and stderr when it failed."""
    p = inject(pid, fn, backend=backend, timeout=10)
    if p.returncode == 0 and p.stdout.startswith("result="):
        return int(p.stdout.split("=", 1)[1])
    return f"exit {p.returncode}: {p.stderr.strip()}"


def detach_finished(pid, backend):
    """After mw_detach's -ETIMEDOUT (its helper still finishing after the
    5 s inject_abi.h gives it: seen at load 8-13, the churning threads
    holding the target's mmap lock): 0 once mw_detach says the library
    is no longer attached (-ENOENT) within 60 s, else what it said last."""
    deadline = time.monotonic() + 60
    while True:
        got = inject_outcome(pid, backend, "mw_detach")
        if got in (0, -errno.ENOENT):
            return 0
        if got != -errno.ETIMEDOUT or time.monotonic() > deadline:
            return got
        time.sleep(1)


def end_churn(t):
    """The target, still running, checks its mappings and exits 0."""
    assert t.p.poll() is None, "the target died"
    rc, rest, err = t.finish(timeout=30)
    assert (rc, rest) == (0, ["churn ok sigint=0"]), err


@pytest.mark.parametrize("backend", BACKENDS)
def test_inject_into_churning_target(spawn, backend):
    """ROUNDS attaches and detaches by mwrap-inject, each call with the
    backend under test: every one succeeds (a missed line of maps shows
    as exit 9, "gdb did not complete the call", or exit 8, libc or our
    library not found).  Bounded by a 150 s deadline, within which at
    least MIN_ROUNDS must have run."""
    t = start_churn(spawn, backend)
    failed = []
    deadline = time.monotonic() + 150
    for n in range(ROUNDS):
        if time.monotonic() > deadline:
            assert n >= MIN_ROUNDS, f"only {n} rounds in 150 s"
            break
        for fn in ("mw_attach", "mw_detach"):
            got = inject_outcome(t.pid, backend, fn)
            if fn == "mw_detach" and got == -errno.ETIMEDOUT:
                got = detach_finished(t.pid, backend)
            if got != 0:
                failed.append(f"round {n} {fn}: {got}")
        assert untraced_within(t.pid, 10), f"still traced after round {n}"
    assert not failed, f"{len(failed)} of {2 * ROUNDS} calls failed: " + \
        "; ".join(failed[:5])
    end_churn(t)


@pytest.mark.parametrize("backend", BACKENDS)
def test_attach_churning_target(spawn, backend):
    """The front end, whose own checks read maps too (a static binary?
    the library already loaded? attached?): a short window, then
    detached, FRONT_END_ROUNDS times."""
    t = start_churn(spawn, backend)
    for n in range(FRONT_END_ROUNDS):
        p = attach(["-p", str(t.pid), "-d", "0.1", f"--backend={backend}"],
                   timeout=60)
        assert p.returncode == 0, f"round {n}: {p.stderr}"
        assert p.stdout.startswith(f"mwrap report: pid {t.pid}")
        assert untraced_within(t.pid, 10)
    end_churn(t)
