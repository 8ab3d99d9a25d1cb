# SPDX-License-Identifier: MIT
"""The gdb we drive is proven on a process of our own before it touches
the target: Debian 12's gdb 13.1 on a CPU with AMX
cannot write a thread's extended state back after an inferior call, and
a target it interrupted in a system call then dies.  Machines without
the fault simulate it with a gdb that does the same damage: each process
it called into is killed once it detaches."""
import os
import shutil

import pytest

from conftest import ATTACH, TARGETS, ptrace_allowed, run

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = [
    pytest.mark.skipif(ptrace_allowed() is not None,
                       reason="ptrace not permitted"),
    pytest.mark.skipif(shutil.which("gdb") is None, reason="no gdb"),
]
BLOCKER = os.path.join(TARGETS, "blocker")

FAULTY_GDB = """#!/bin/sh
# a gdb whose inferior calls leave the process they interrupted to die
{gdb} "$@"
rc=$?
while [ $# -gt 0 ]; do
	[ "$1" = -p ] && kill -SEGV "$2"
	shift
done
exit $rc
"""


# a gdb that leaves a register of the thread it called into changed, as
# Debian 12's gdb 13.1's own inferior calls did to the AVX-512 state on a
# CPU that lays it out unlike Intel's (the thread it interrupted in an
# EVEX memcpy copied zeros): it passes the blocked-thread probe, not the
# vector one
DAMAGING_GDB = """#!/bin/sh
{gdb} "$@"
rc=$?
while [ $# -gt 0 ]; do
	[ "$1" = -p ] && {gdb} -p "$2" -batch -nx -ex 'set $xmm3.v2_int64[0] = 5' >/dev/null 2>&1
	shift
done
exit $rc
"""


def assert_refused_untouched(p, t):
    """P (an attach with --backend=gdb) was refused with the fix, and
    target T was never touched: nothing loaded, its read goes on."""
    assert p.returncode == 7, p.stderr
    assert "cannot restore" in p.stderr and "--backend=ptrace" in p.stderr
    with open(f"/proc/{t.pid}/maps") as f:
        assert "libmwrap" not in f.read()


@pytest.mark.parametrize("n", range(REPEAT))
def test_a_gdb_that_kills_what_it_calls_into_is_refused(spawn, tmp, n):
    fake = tmp / "gdb"
    fake.write_text(FAULTY_GDB.format(gdb=shutil.which("gdb")))
    fake.chmod(0o755)
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    p = run([ATTACH, "-p", str(t.pid), "--keep", "--backend=gdb"],
            env={"PATH": f"{tmp}:{os.environ['PATH']}"}, timeout=120)
    assert_refused_untouched(p, t)
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    rc, rest, _ = t.finish()
    assert rc == 0 and rest[0] == "done lines=1 eintr=0", rest


@pytest.mark.parametrize("n", range(REPEAT))
def test_a_gdb_that_damages_vector_registers_is_refused(spawn, tmp, n):
    """25.3: the probe's vector victim (every vector register live in a
    running thread) catches a gdb that gives a register back changed."""
    fake = tmp / "gdb"
    fake.write_text(DAMAGING_GDB.format(gdb=shutil.which("gdb")))
    fake.chmod(0o755)
    env = {"PATH": f"{tmp}:{os.environ['PATH']}"}
    check = run([ATTACH, "--check-gdb"], env=env, timeout=120)
    assert check.returncode == 7, check.stderr
    assert "lost its" in check.stderr and "registers" in check.stderr, check.stderr
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    p = run([ATTACH, "-p", str(t.pid), "--keep", "--backend=gdb"], env=env, timeout=120)
    assert_refused_untouched(p, t)
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    rc, _, _ = t.finish()
    assert rc == 0


@pytest.mark.fast
def test_the_gdb_at_hand_attaches_or_is_refused_untouched(spawn):
    """The real gdb here: where --check-gdb passes it, it attaches and the
    target's read goes on; where it does not (Debian 12's gdb 13.1 on a
    CPU with AMX), the attach is refused with the fix and the target,
    blocked in read(), was never touched and reads on."""
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    check = run([ATTACH, "--check-gdb"], timeout=120)
    p = run([ATTACH, "-p", str(t.pid), "--keep", "--backend=gdb"],
            timeout=120)
    if check.returncode == 0:
        assert p.returncode == 0, p.stderr
        assert run([ATTACH, "-p", str(t.pid), "--detach"]).returncode == 0
    else:
        assert check.returncode == 7, check.stderr
        assert_refused_untouched(p, t)
    t.send("hello")
    assert t.expect("got") == "got hello"
    rc, _, _ = t.finish()
    assert rc == 0
