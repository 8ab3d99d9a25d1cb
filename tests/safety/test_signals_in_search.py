# SPDX-License-Identifier: MIT
"""Signals sent to a thread while mwrap-inject looks for a safe point.
Under ptrace every signal stops the thread for
the tracer first.  The injector used to hold each one back and re-send
it after the injection, so a SIGKILLed injector lost every signal of
its search (and more than 32 were lost anyway).  Now each is delivered
as the thread resumes, and a stop inside the handler it runs is no safe
point: the code the signal interrupted may hold a lock.

blocker inlibc has next to no safe point outside its signal handlers:
its one thread is always inside libc (memfrob over 512 MiB), making no
syscall; only the few instructions between two memfrob calls are safe
(stalls on what the sweep evicted make one stop in 37000 land there:
about one search of 200 stops in 190 finds it).  What is injected is inhandler_probe
(tests/targets/inhandler.c): its result says whether the call ran inside
the target's SIGUSR1 handler."""
import os
import signal
import subprocess
import time

import pytest

from conftest import INJECT, TARGETS, proc_stat, ptrace_allowed, tracer_of

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
BLOCKER = os.path.join(TARGETS, "blocker")
PROBE = os.path.join(TARGETS, "libinhandler.so")



def wait_for(cond, seconds):
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)
    return cond()


def usr1_pending(pid):
    """Whether a SIGUSR1 waits in pid's pending sets (not yet taken by
    its thread, delivered or not)."""
    bit = 1 << (signal.SIGUSR1 - 1)
    with open(f"/proc/{pid}/status") as f:
        return any(int(line.split()[1], 16) & bit for line in f
                   if line.startswith(("SigPnd:", "ShdPnd:")))


def counts(t):
    """Ends the target (SIGTERM): {"usr1": N, "rt": M} from its last
    line, once it has exited 0."""
    os.kill(t.pid, signal.SIGTERM)
    rc, rest, err = t.finish(timeout=30)
    assert rc == 0 and len(rest) == 1 and rest[0].startswith("inlibc "), err
    return {k: int(v) for k, v in (w.split("=") for w in rest[0].split()[1:])}


def injector(pid, timeout, out=subprocess.DEVNULL, err=None):
    """mwrap-inject calling inhandler_probe; its stdout to OUT, its
    stderr (with -v) to the open file ERR (a pipe left unread would fill
    up and block it)."""
    return subprocess.Popen([INJECT, "-p", str(pid), "--timeout",
                             str(timeout)] + (["-v"] if err else []) +
                            [PROBE, "inhandler_probe", ""], stdout=out,
                            stderr=err or subprocess.DEVNULL)


def search_with_signals(t):
    """An injector searching in T for 30 s, sent 40 SIGRTMIN and 4 bursts
    of 3 SIGUSR1 over 0.4 s, then SIGKILLed: (bursts, whether it was
    still searching when killed)."""
    inj = injector(t.pid, 30)
    try:
        assert wait_for(lambda: tracer_of(t.pid), 10), "never seized"
        bursts = 0
        for i in range(40):
            os.kill(t.pid, signal.SIGRTMIN)
            if i % 10 == 0:
                assert wait_for(lambda: not usr1_pending(t.pid), 10)
                for _ in range(3):
                    os.kill(t.pid, signal.SIGUSR1)
                bursts += 1
            time.sleep(0.01)
        searching = inj.poll() is None
        inj.kill()
        inj.wait(timeout=10)
    finally:
        if inj.poll() is None:
            inj.kill()
            inj.wait(timeout=10)
    return bursts, searching


@pytest.mark.parametrize("n", range(REPEAT))
def test_no_signal_lost_when_the_injector_dies_mid_search(spawn, n):
    """40 SIGRTMIN (queued: each one counts) and 4 bursts of 3 SIGUSR1
    over 0.4 s of the search, then SIGKILL to the injector: all of them
    reach the target's handlers.  A burst is sent once the thread has
    taken the last one's SIGUSR1 from its pending set (a thread stopped
    for long, as under a loaded machine, would merge two bursts into
    one signal, traced or not): at least one per burst."""
    t = spawn([BLOCKER, "inlibc"])
    t.expect("ready")
    # a search that finds the one safe window before the kill proves
    # nothing: then again (the probe it called is harmless)
    rt = bursts = 0
    for _ in range(3):
        n_bursts, killed = search_with_signals(t)
        rt += 40
        bursts += n_bursts
        if killed:
            break
    assert killed, "three searches found a safe point before the kill"
    assert wait_for(lambda: not tracer_of(t.pid), 5), "still traced"
    got = counts(t)
    print(f"after the kill: rt={got['rt']} of {rt}, usr1={got['usr1']} "
          f"(at least {bursts})")
    assert got["rt"] == rt and got["usr1"] >= bursts, got


@pytest.mark.parametrize("n", range(REPEAT))
def test_a_handler_it_lets_run_is_no_safe_point(spawn, tmp, n):
    """SIGUSR1 every 25 ms, whose handler spins 20 ms in code of its
    own: most stops of the search land in it, which looks like a safe
    place but interrupted memfrob (it could as well have been malloc).
    The injector must never call inside it: either it finds no safe
    point (exit 5 at its 3 s timeout) or the probe says it ran outside
    the handler.  The target counts every signal sent."""
    t = spawn([BLOCKER, "inlibc", "20"])
    t.expect("ready")
    with open(tmp / "inject.out", "w") as out, \
            open(tmp / "inject.err", "w") as err:
        inj = injector(t.pid, 3, out, err)
    sent = 0
    try:
        assert wait_for(lambda: tracer_of(t.pid), 10), "never seized"
        deadline = time.monotonic() + 30
        while inj.poll() is None and time.monotonic() < deadline:
            os.kill(t.pid, signal.SIGUSR1)
            sent += 1
            time.sleep(0.025)
        inj.wait(timeout=30)
    finally:
        if inj.poll() is None:
            inj.kill()
            inj.wait(timeout=10)
    out, err = (tmp / "inject.out").read_text(), (tmp / "inject.err").read_text()
    assert (inj.returncode, out) in ((5, ""), (0, "result=0\n")), \
        f"{inj.returncode} {out!r} (result=1: called inside the handler)"
    assert "inside a signal handler" in err, "no stop landed in a handler"
    got = counts(t)
    assert 0 < got["usr1"] <= sent, (got, sent)


def state_of(pid):
    return proc_stat(pid)[0]


def test_a_stop_signal_stops_the_process_and_ends_the_search(spawn):
    """SIGSTOP during the search is delivered too: the process stops
    (state T, untraced) and the injector gives up at once (exit 5), not
    at its timeout; SIGCONT lets it go on.  A search that found the safe
    window before the signal (exit 0: the probe ran) proves nothing:
    then again."""
    t = spawn([BLOCKER, "inlibc"])
    t.expect("ready")
    for _ in range(3):
        inj = injector(t.pid, 30)
        try:
            assert wait_for(lambda: tracer_of(t.pid) or
                            inj.poll() is not None, 10), "never seized"
            time.sleep(0.1)
            if inj.poll() is None:
                os.kill(t.pid, signal.SIGSTOP)
            rc = inj.wait(timeout=10)
        finally:
            if inj.poll() is None:
                inj.kill()
                inj.wait(timeout=10)
        if rc != 0:
            break
        assert wait_for(lambda: not tracer_of(t.pid), 5), "still traced"
        os.kill(t.pid, signal.SIGCONT)  # if it ended as we sent SIGSTOP
    assert rc == 5
    assert wait_for(lambda: not tracer_of(t.pid), 5), "still traced"
    assert state_of(t.pid) == "T"
    os.kill(t.pid, signal.SIGCONT)
    assert wait_for(lambda: state_of(t.pid) != "T", 5)
    assert counts(t) == {"usr1": 0, "rt": 0}
