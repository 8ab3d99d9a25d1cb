# SPDX-License-Identifier: MIT
"""Safe points inside libc's string routines on the CPU at hand (x86-64 on
the host, aarch64 in the VM of dev/arm64-vm): a thread
called memcpy/memset from its own code is at a safe point while inside
them (inject/base/leaves_aarch64.c's leaves, walked by tests/c/test_leaves),
and the native backend's calls run there; the same memcpy called by
realloc (under the arena's lock) is never taken for one, nor is pc in
another routine while x30 still says "called memcpy" (aarch64).

Deadlines scale with MWRAP_TEST_SLOW (the guest's job sets it: TCG runs
20-40x slower than the host)."""
import os
import platform
import signal
import subprocess

import pytest

from conftest import inject, ptrace_allowed, scaled as t, tracer_of

HERE = os.path.dirname(os.path.abspath(__file__))
BUSYCOPY_C = os.path.join(HERE, "..", "targets", "busycopy.c")
SAFE_IN_LEAF = "safe point inside a string routine"

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=str(ptrace_allowed()))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """busycopy, stale_lr and libanswer.so, compiled here for this CPU."""
    d = tmp_path_factory.mktemp("safepoints")
    out = {k: str(d / k) for k in ("busycopy", "stale_lr", "libanswer.so")}
    for argv in (["gcc", "-O2", "-g", "-Wall", "-Werror", "-o",
                  out["busycopy"], BUSYCOPY_C],
                 ["gcc", "-O2", "-g", "-Wall", "-Werror", "-o",
                  out["stale_lr"], os.path.join(HERE, "stale_lr.c")],
                 ["gcc", "-O2", "-g", "-Wall", "-Werror", "-shared", "-fPIC",
                  "-o", out["libanswer.so"],
                  os.path.join(HERE, "answer_lib.c")]):
        subprocess.run(argv, check=True, timeout=t(60))
    return out


def answer(pid, lib, arg, timeout):
    """mwrap-inject -v --backend=ptrace calling answer(ARG): the run."""
    return inject(pid, "answer", arg, lib=lib, backend="ptrace",
                  timeout=timeout, verbose=True)


@pytest.mark.skipif(platform.machine() == "x86_64", reason="x86-64's: "
                    "tests/safety/test_inject_death.py (the same targets)")
def test_busy_in_memcpy_attaches(spawn, built):
    """busycopy (16 MiB memset then memcpy, in a loop) is inside one of
    them at nearly every stop; three calls land, and at least one of
    them at a safe point inside the routine (each stop lands in the
    loop's own code with odds of about 1e-4).  The copies stay intact:
    busycopy checks them and ends with its usual line."""
    p = spawn(["setsid", built["busycopy"], "16"])
    p.expect("ready", timeout=30)
    errs = []
    for i in range(3):
        r = answer(p.pid, built["libanswer.so"], "x" * i, 10)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert r.stdout.strip() == "result=%d" % (40 + i)
        errs.append(r.stderr)
    assert any(SAFE_IN_LEAF in e for e in errs), errs
    assert tracer_of(p.pid) == 0
    rc, rest, err = p.finish(timeout=30)
    assert (rc, rest) == (0, ["copies ok sigint=0"]), err


@pytest.mark.skipif(platform.machine() == "x86_64", reason="x86-64's: "
                    "tests/safety/test_inject_death.py (the same targets)")
def test_memcpy_inside_realloc_is_no_safe_point(spawn, built):
    """busycopy's realloc rounds: memcpy called by realloc, under the
    arena's lock, nearly all the time; x30 there points into libc.  The
    calls wait for a point outside libc (17 to 51 stops on an idle
    x86-64 host), never report one inside a string routine, and the
    moved bytes stay intact (busycopy checks each round's)."""
    p = spawn(["setsid", built["busycopy"], "1", "realloc"])
    p.expect("ready", timeout=30)
    for i in range(3):
        r = answer(p.pid, built["libanswer.so"], "y" * i, 30)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert r.stdout.strip() == "result=%d" % (40 + i)
        assert SAFE_IN_LEAF not in r.stderr, r.stderr
    assert tracer_of(p.pid) == 0
    rc, rest, err = p.finish(timeout=30)
    assert (rc, rest) == (0, ["copies ok sigint=0"]), err


@pytest.mark.skipif(platform.machine() != "aarch64",
                    reason="x30 is aarch64's (x86-64's rule reads [rsp])")
def test_stale_x30_outside_the_leaf_is_no_safe_point(spawn, built):
    """stale_lr: pc in strlen, x30 just past a "bl memcpy" of its own
    code.  Were the rule only x30's, memcpy's entry would make it a
    safe point; pc must lie in the code memcpy's walk reached, so no
    stop is one inside a string routine: the injector gives up (200
    stops or its deadline; the loop's own 5 instructions against ~1M
    in each strlen make a point outside libc very unlikely, and it
    would be a true safe point anyway), leaves the thread untraced, and
    it goes on to end on SIGTERM with strlen's answer."""
    p = spawn([built["stale_lr"]])
    p.expect("ready", timeout=30)
    r = answer(p.pid, built["libanswer.so"], "", 5)
    assert SAFE_IN_LEAF not in r.stderr, r.stderr
    assert r.returncode != 0 or r.stdout.strip() == "result=40", \
        (r.returncode, r.stdout, r.stderr)
    assert tracer_of(p.pid) == 0
    assert p.p.poll() is None, "the target died"
    os.kill(p.pid, signal.SIGTERM)
    rc, rest, err = p.finish(timeout=30)
    assert (rc, rest) == (0, ["stopped %d" % (16 << 20)]), err
