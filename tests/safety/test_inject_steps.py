# SPDX-License-Identifier: MIT
"""The target survives the injector's death at each step of its run, not
only at the moments a random kill happens to land on (test_inject_death).

mwrap-inject runs with build/targets/libkillstep.so preloaded, which
SIGKILLs it just before or just after one chosen step that changes the
target (a ptrace request other than a read, or a process_vm_writev).  A
whole run is logged first; the kill points are then every step next to
one that occurs a fixed number of times in a run (seizing, writing
memory, setting registers, mask or vector state, detaching): just before
it, just after it, and one step later.  The steps between them are
syscall stops and the search for a safe point, whose number varies.

After each death the target must be untraced, alive, and in the end
exit 0 with its usual last line.  The CI run on Debian 13 that found the
window between mwi_settle and mwi_release (the thread returned from the
skipped rt_sigreturn past it, into the trampoline's hlt: SIGSEGV) is
SETREGS:4+0 here.
"""
import collections
import os
import time

import pytest

from conftest import TARGETS, inject, ptrace_allowed, untraced_within
from test_inject_death import end_target, has_lib, start_target

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
KILLSTEP = os.path.join(TARGETS, "libkillstep.so")
# steps a run makes a fixed number of times (CONT, INTERRUPT and SYSCALL
# repeat as often as the search and the calls need)
ANCHORS = ("SEIZE", "WRITEV", "SETREGS", "SETREGSET", "SETSIGMASK",
           "POKEDATA", "DETACH")


def kill_points(steps):
    """(variable, value) for the killstep library, one per position in
    @steps (a whole run's step names), in their order."""
    at, seen = {}, collections.Counter()
    for i, name in enumerate(steps):
        seen[name] += 1
        if name not in ANCHORS:
            continue
        n = seen[name]
        for pos, point in ((i - 1, ("MWI_KILL_BEFORE", f"{name}:{n}")),
                           (i, ("MWI_KILL_AFTER", f"{name}:{n}+0")),
                           (i + 1, ("MWI_KILL_AFTER", f"{name}:{n}+1"))):
            # not before the first step, nor after the last (all done)
            if 0 <= pos < len(steps) - 1:
                at.setdefault(pos, point)
    return [at[pos] for pos in sorted(at)]


def logged_run(spawn, kind, tmp_path):
    t, want = start_target(spawn, kind)
    log = tmp_path / "steps"
    p = inject(t.pid, env={"LD_PRELOAD": KILLSTEP, "MWI_STEP_LOG": str(log)})
    assert p.returncode == 0, p.stderr
    end_target(t, want)
    return log.read_text().split()


@pytest.mark.parametrize("kind", ["c", "ruby"])
def test_injector_killed_at_each_step(spawn, kind, tmp_path):
    points = kill_points(logged_run(spawn, kind, tmp_path))
    assert len(points) > 20, points
    missed, t = [], None
    for var, value in points:
        if t is None:
            t, want = start_target(spawn, kind)
        p = inject(t.pid, env={"LD_PRELOAD": KILLSTEP, var: value})
        if p.returncode != -9:
            missed.append(value)    # this run took another path
        assert untraced_within(t.pid, 5), f"still traced after {value}"
        time.sleep(0.2)     # a thread resumed into a fault dies at once
        assert t.p.poll() is None, \
            f"the target died ({t.p.returncode}) after {var}={value}"
        if has_lib(t.pid):
            # later runs take the loaded library's path: a new target
            end_target(t, want)
            t = None
    if t is not None:
        end_target(t, want)
    # a run's path varies a little (a call stopped by a signal, say)
    assert len(missed) <= len(points) // 4, missed
