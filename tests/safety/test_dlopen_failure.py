# SPDX-License-Identifier: MIT
"""A dlopen that fails in the target.  Its message
is what dlerror() would say, and fetching it must not put the target at
risk: the injector used to call dlerror() unguarded after the guarded
dlopen, with a return address that traps, so a SIGKILL to the injector
during that call killed the target (SIGSEGV at address 0), and a
timeout during it gave the wrong failure ("finding the function").  Now
the message is read from the thread's own record of the failure, with
no call into the target after dlopen."""
import os
import queue
import subprocess
import time

import pytest

from conftest import INJECT, TARGETS, inject, ptrace_allowed, skip_unless_gdb_works

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
BLOCKER = os.path.join(TARGETS, "blocker")
SLOWERROR = os.path.join(TARGETS, "slowerror")
NOPE = "/nonexistent/libnope.so"


@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
def test_failed_dlopen_gives_dlerror_text(spawn, tmp, backend):
    """Three ways to fail, each with glibc's own words; the target reads
    on as before."""
    if backend == "gdb":
        skip_unless_gdb_works()
    text = tmp / "not-a-library.so"
    text.write_text("not an ELF file\n" * 20)
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    cases = {NOPE: f"{NOPE}: cannot open shared object file: "
                   "No such file or directory",
             str(text): f"{text}: invalid ELF header",
             str(tmp): f"{tmp}: cannot read file data: Is a directory"}
    for lib, words in cases.items():
        p = inject(t.pid, lib=lib, backend=backend)
        assert p.returncode == 6, p.stderr
        assert p.stderr.splitlines()[-1] == \
            f"mwrap-inject: dlopen: {lib} failed in the target: {words}"
    t.send("still here")
    assert t.expect("got") == "got still here"
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["done lines=1 eintr=0"]


@pytest.mark.parametrize("ending", ["kill", "timeout"])
@pytest.mark.parametrize("n", range(REPEAT))
def test_injector_death_after_a_failed_dlopen(spawn, ending, n):
    """slowerror's malloc sleeps 3 s when libc itself calls it, as
    dlerror() does to format its message.  The injector is SIGKILLed if
    it gets that far ("slow malloc"), or has a 1 s --timeout: the target
    lives on, and was never called after dlopen (slept=0)."""
    t = spawn([SLOWERROR])
    t.expect("ready")
    inj = subprocess.Popen([INJECT, "-p", str(t.pid), "--timeout",
                            "1" if ending == "timeout" else "20", NOPE,
                            "mw_attach", ""], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        slow = False
        while inj.poll() is None and time.monotonic() < deadline:
            try:
                slow = t.lines.get(timeout=0.05) == "slow malloc"
            except queue.Empty:
                continue
            if slow and ending == "kill":
                inj.kill()
        _, err = inj.communicate(timeout=30)
    finally:
        if inj.poll() is None:
            inj.kill()
            inj.wait(timeout=10)
    if slow:
        time.sleep(3.5)     # the sleep ends, the call returns
    assert t.p.poll() is None, f"the target died ({t.p.returncode})"
    rc, rest, _ = t.finish()
    assert (rc, rest) == (0, ["slowerror ok slept=0"]), \
        "a call into the target after the failed dlopen"
    assert inj.returncode == 6, err
    assert f"{NOPE}: cannot open shared object file" in err
