# SPDX-License-Identifier: MIT
"""The injector's calls on the CPU at hand (x86-64 on the host, aarch64 in
the VM of scripts/arm64-vm, make test-arm64): mwrap-inject loads a small
library into C targets stopped in a blocking read, in a nanosleep and in
a loop of their own, with the native backend and with gdb, and each
target goes on as if nothing happened (its registers, vector registers,
its sleep and its input intact).  Neither libmwrap.so nor Ruby is needed.

Deadlines scale with MWRAP_TEST_SLOW (the guest's job sets it: TCG runs
20-40x slower than the host)."""
import os
import platform
import subprocess

import pytest

from conftest import INJECT, ptrace_allowed, skip_unless_gdb_works

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW = float(os.environ.get("MWRAP_TEST_SLOW", "1"))

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=str(ptrace_allowed()))


def t(seconds):
    return seconds * SLOW


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """target and libanswer.so, compiled here for this CPU."""
    d = tmp_path_factory.mktemp("arm64")
    target, lib = str(d / "target"), str(d / "libanswer.so")
    for argv in (["gcc", "-O2", "-g", "-Wall", "-Werror", "-o", target,
                  os.path.join(HERE, "target.c")],
                 ["gcc", "-O2", "-g", "-Wall", "-Werror", "-shared", "-fPIC",
                  "-o", lib, os.path.join(HERE, "answer_lib.c")]):
        subprocess.run(argv, check=True, timeout=t(60))
    return target, lib


def inject(pid, lib, fn, arg="", backend=None):
    argv = [INJECT, "-p", str(pid), "--timeout", str(int(t(10)))]
    if backend:
        argv.append("--backend=" + backend)
    p = subprocess.run(argv + [lib, fn, arg], capture_output=True, text=True,
                       timeout=t(60))
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p.stdout.strip()


def test_the_injector_is_built_for_this_cpu():
    out = subprocess.run(["file", "-L", INJECT], capture_output=True,
                         text=True, timeout=t(10)).stdout
    want = {"x86_64": "x86-64", "aarch64": "ARM aarch64"}[platform.machine()]
    assert want in out, out


@pytest.mark.parametrize("backend", [None, "gdb"])
def test_call_in_a_thread_blocked_in_read(spawn, built, backend):
    if backend == "gdb":
        skip_unless_gdb_works()
    target, lib = built
    p = spawn([target, "read"])
    p.expect("ready", timeout=t(10))
    assert inject(p.pid, lib, "answer", "hello", backend) == "result=45"
    assert inject(p.pid, lib, "answer_count", "", backend) == "result=1"
    # the read it was blocked in goes on, and gets the line
    p.send("after")
    assert p.expect("got ", timeout=t(10)) == "got after"
    p.send("end")
    rc, rest, err = p.finish(timeout=t(10))
    assert (rc, rest) == (0, []), err


def test_calls_in_a_busy_loop_leave_its_registers(spawn, built):
    target, lib = built
    p = spawn([target, "spin"])
    p.expect("ready", timeout=t(10))
    for i in range(3):
        assert inject(p.pid, lib, "answer", "x" * i) == "result=%d" % (40 + i)
    assert inject(p.pid, lib, "answer_count") == "result=3"
    rc, rest, err = p.finish(timeout=t(20))
    assert rc == 0, (rest, err)
    assert len(rest) == 1 and rest[0].startswith("sum "), rest


def test_call_during_nanosleep_the_sleep_goes_on(spawn, built):
    target, lib = built
    p = spawn([target, "sleep"])
    p.expect("ready", timeout=t(10))
    assert inject(p.pid, lib, "answer", "zz") == "result=42"
    # the interrupted sleep is restarted, never cut short with EINTR
    assert p.expect("", timeout=t(10)) == "slept"
    rc, rest, err = p.finish(timeout=t(10))
    assert rc == 0 and "EINTR" not in rest, (rest, err)


def test_vector_registers_survive_the_calls(spawn, built):
    _, lib = built
    p = spawn([INJECT, "--vector-victim"])
    which = p.expect("ready", timeout=t(10)).split()[1]
    for _ in range(3):
        assert inject(p.pid, lib, "answer", "") == "result=40"
    rc, rest, err = p.finish(timeout=t(60))
    assert rc == 0 and rest and rest[-1].startswith("ok "), \
        (which, rest, err)
