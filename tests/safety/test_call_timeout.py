# SPDX-License-Identifier: MIT
"""A call of ours that outlives the injector's --timeout.  The injected dlopen() runs library constructors under the loader
lock; one that takes 3 s is still inside the loader when a 1 s timeout
fires.  The injector must leave that call to finish in the target (its
signal frame restores the thread afterwards, as when the injector is
SIGKILLed), never unwind the thread out of it: unwound, the lock stays
taken and the target's next dlopen() hangs for ever."""
import os
import subprocess
import time

import pytest

from conftest import INJECT, TARGETS, ptrace_allowed

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
BLOCKER = os.path.join(TARGETS, "blocker")
SLOW = os.path.join(TARGETS, "libslowctor.so")


@pytest.mark.parametrize("n", range(REPEAT))
def test_a_timed_out_call_finishes_in_the_target(spawn, n):
    t = spawn([BLOCKER, "dlloop"])
    t.expect("ready")
    began = time.monotonic()
    p = subprocess.run([INJECT, "-p", str(t.pid), "--timeout", "1", SLOW,
                        "slowctor_ready", "x"], capture_output=True,
                       text=True, timeout=60)
    took = time.monotonic() - began
    assert p.returncode == 9, p.stdout + p.stderr
    assert "goes on in the target" in p.stderr, p.stderr
    assert took < 2.9, f"the injector waited {took:.1f} s for a 1 s timeout"
    # the constructor ends 3 s after the call began; then the thread is
    # restored by its own frame and the loader lock is free again
    time.sleep(3.5)
    with open(f"/proc/{t.pid}/status") as f:
        assert "TracerPid:\t0" in f.read()
    rc, rest, _ = t.finish(timeout=15)
    assert rc == 0 and rest == ["dlloop ok ran"]
    # and a second injection finds the library loaded and calls it
    t2 = spawn([BLOCKER, "dlloop"])
    t2.expect("ready")
    p = subprocess.run([INJECT, "-p", str(t2.pid), "--timeout", "10", SLOW,
                        "slowctor_ready", "x"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "result=7" in p.stdout, p.stderr
    rc, rest, _ = t2.finish(timeout=15)
    assert rc == 0 and rest == ["dlloop ok ran"]


@pytest.mark.parametrize("ending", ["timeout", "kill"])
@pytest.mark.parametrize("n", range(REPEAT))
def test_a_call_its_frame_finishes_keeps_the_avx_registers(spawn, ending, n):
    """A call that the thread's own signal frame ends (the injector's
    timeout ran out, or the injector was SIGKILLed, during a 3 s
    constructor) restores the whole vector state: the target holds known
    values in all 16 YMM registers.  On a CPU with AMX, ptrace's 11008
    bytes of extended state in that frame made rt_sigreturn restore the
    legacy area alone and zero the YMM upper halves: CORRUPT."""
    t = spawn([os.path.join(TARGETS, "vecloop"), "ymm"])
    if t.expect("") == "noavx":
        pytest.skip("no AVX on this CPU")
    inj = subprocess.Popen([INJECT, "-p", str(t.pid), "--timeout",
                            "1" if ending == "timeout" else "20", SLOW,
                            "slowctor_ready", "x"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    if ending == "kill":
        time.sleep(1)
        inj.kill()
    _, err = inj.communicate(timeout=60)
    assert inj.returncode == (9 if ending == "timeout" else -9), err
    # the constructor ends 3 s after the call began; the frame restores
    # the thread, which goes on with its loop
    time.sleep(3.5)
    with open(f"/proc/{t.pid}/status") as f:
        assert "TracerPid:\t0" in f.read()
    rc, rest, _ = t.finish(timeout=30)
    assert rc == 0 and rest == ["ok blocks"], rest
