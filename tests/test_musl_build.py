# SPDX-License-Identifier: MIT
"""The musl build (make build-musl: build/musl/lib/libmwrap.so with its
liburcu) in a musl process: tests/targets/cleak.c built with musl-gcc,
which leaks at leak_here() and frees what churn_here() allocates.

Preloaded under musl's loader, its exit dump names leak_here.  Attached
by hand: the library and its liburcu copied into a directory of their
own (staged), loaded by mwrap-inject (either build's: the injector
does not care which C library the target has) with either backend, a
dump asked through the control file, then detach; the target runs on
with its blocks intact.  Attached by mwrap-attach, which picks the musl
build by the target's maps.  Each in Debian's layout (libc is
/usr/lib/ARCH-linux-musl/libc.so) and Alpine's (libc is the loader's
own file, ld-musl-ARCH.so.1).  Skipped without musl-gcc or the build."""
import glob
import json
import os
import shutil
import time

import pytest

from conftest import (ATTACH, INJECT, MWRAP, ROOT, during_window, helper_answered, parse_json_dump,
                      ptrace_allowed, run, runtime_dir, scaled, skip_unless_gdb_works,
                      start_ready, tracer_of)

MUSL = os.path.join(ROOT, "build", "musl")
MUSL_LIB = os.path.join(MUSL, "lib", "libmwrap.so")
MUSL_INJECT = os.path.join(MUSL, "bin", "mwrap-inject")
CLEAK = os.path.join(MUSL, "targets", "cleak")
LOADER = (glob.glob("/lib/ld-musl-*.so.1") or [None])[0]

pytestmark = pytest.mark.skipif(
    not (LOADER and os.path.exists(CLEAK) and os.path.exists(MUSL_LIB)),
    reason="no musl build: make build-musl (it installs musl-tools, builds "
           "liburcu for musl once, then build/musl/)")
needs_ptrace = pytest.mark.skipif(ptrace_allowed() is not None,
                                  reason=f"ptrace not permitted: {ptrace_allowed()}")


def cleak_argv(tmp, layout):
    """cleak as Debian's musl runs it, or with libc mapped as Alpine
    maps it (a copy of musl's libc named as its loader, run as one)."""
    if layout == "debian":
        return [CLEAK]
    loader = tmp / os.path.basename(LOADER)
    if not loader.exists():
        shutil.copy(os.path.realpath(LOADER), loader)
    return [str(loader), CLEAK]


def mine(sites, function):
    """The one site of FUNCTION in cleak."""
    found = [s for loc, s in sites.items() if f"/cleak({function}+0x" in loc]
    assert len(found) == 1, list(sites)
    return found[0]


@pytest.mark.parametrize("how", ["LD_PRELOAD", "mwrap"])
@pytest.mark.parametrize("layout", ["debian", "alpine"])
def test_preload_names_the_leaking_function(spawn, tmp, layout, how):
    """By hand, or by `mwrap`, which picks the musl build by the
    program's ELF interpreter (or by its name: the loader run as one)."""
    dump = tmp / "exit.json"
    env = {"MWRAP": f"dump_path:{dump},dump_format:json"}
    if how == "LD_PRELOAD":
        t, _ = start_ready(spawn, cleak_argv(tmp, layout), env={**env, "LD_PRELOAD": MUSL_LIB})
    else:
        t, _ = start_ready(spawn, [MWRAP, *cleak_argv(tmp, layout)], env=env)
        assert MUSL_LIB in open(f"/proc/{t.pid}/maps").read()
    t.send("leak 1000 4096")
    t.expect("leaked 1000")
    t.send("churn 2000")
    t.expect("churned")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == ["bye 4096000"], (rc, rest, err)
    header, sites = parse_json_dump(dump.read_text())
    # mallocng keeps no mallinfo: the fields are left out, never zero
    assert header["allocator"] == "musl"
    assert not any(k.startswith("malloc_") for k in header), header
    leak = mine(sites, "leak_here")
    assert leak["allocations"] == 1000 and leak["live_count"] == 1000
    assert leak["total_bytes"] == leak["live_bytes"] == 4096 * 1000
    churn = mine(sites, "churn_here")
    assert churn["allocations"] == churn["frees"] == 2000
    assert churn["live_bytes"] == 0


def test_a_program_run_by_a_relative_path_is_named_by_its_own(spawn, tmp):
    """musl names the main program as it was run ("./cleak"), where
    glibc gives "" (and names the vdso "" instead): the dump names it by
    its real path all the same, and reads its symbols from there."""
    dump = tmp / "exit.json"
    t, _ = start_ready(spawn, [MWRAP, "./cleak"], cwd=os.path.dirname(CLEAK),
                       env={"MWRAP": f"dump_path:{dump},dump_format:json"})
    t.send("leak 10 1000")
    t.expect("leaked 10")
    assert t.finish()[0] == 0
    _, sites = parse_json_dump(dump.read_text())
    leak = [loc for loc in sites if "(leak_here+0x" in loc]
    assert len(leak) == 1 and leak[0].startswith(f"{CLEAK}(leak_here+0x"), leak


def stage(tmp):
    """libmwrap.so and its liburcu copied into a directory of their own,
    as the front end stages them for a target: liburcu must be found
    there ($ORIGIN), not where it was built."""
    d = tmp / "staged"
    d.mkdir()
    for f in glob.glob(os.path.join(MUSL, "lib", "*.so*")):
        shutil.copy(f, d)
    return d


def command(rundir, line, timeout=20):
    """Appends LINE to the control file; its answer ("ok ..." or
    "error: ..."), progress lines skipped.  "out" is read through a
    descriptor opened first, as the front end reads it: a detach may
    remove the directory once it has answered."""
    with open(f"{rundir}/out", "rb") as out:
        before = os.fstat(out.fileno()).st_size
        with open(f"{rundir}/ctl", "a") as f:
            f.write(line + "\n")
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            text = os.pread(out.fileno(), 1 << 20, before).decode()
            answers = [a for a in text.split("\n")[:-1]
                       if not a.startswith("progress ")]
            if answers:
                return answers[0]
            time.sleep(0.05)
    raise AssertionError(f"no answer to {line!r}")


@needs_ptrace
@pytest.mark.parametrize("injector", ["glibc", "musl"])
@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
@pytest.mark.parametrize("layout", ["debian", "alpine"])
def test_attach_by_hand_names_the_leak_and_detaches(spawn, tmp, layout, backend,
                                                     injector):
    if backend == "gdb" and shutil.which("gdb") is None:
        pytest.skip("gdb is not installed")
    staged = stage(tmp)
    t, _ = start_ready(spawn, cleak_argv(tmp, layout))
    t.send("leak 100 1000")
    t.expect("leaked 100")
    p = run([INJECT if injector == "glibc" else MUSL_INJECT, "-p", str(t.pid), f"--backend={backend}", "--timeout",
             str(int(scaled(30))), str(staged / "libmwrap.so"), "mw_attach",
             "dump_format:json"], timeout=90)
    assert p.returncode == 0 and p.stdout == "result=0\n", (p.returncode, p.stderr)
    maps = open(f"/proc/{t.pid}/maps").read()
    for so in ("libmwrap.so", "liburcu-bp.so.8", "liburcu-cds.so.8",
               "liburcu-common.so.8"):
        assert f"{staged}/{so}" in maps, so
    # its name, as the target (in our root) sees it: the helper's
    # descriptor of it goes at detach
    _, rundir = runtime_dir(t.pid)
    assert rundir, "no runtime directory"
    # the helper thread answers on its own, after mw_attach returned
    deadline = time.monotonic() + scaled(10)
    while not helper_answered(t.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    with open(f"{rundir}/out") as f:
        assert f.read().startswith("ok attached"), "no attach answer"

    t.send("leak 500 4096")
    t.expect("leaked 500")
    t.send("churn 1000")
    t.expect("churned")
    answer = command(rundir, "dump --json window.json")
    assert answer.startswith("ok dump"), answer
    with open(f"{rundir}/window.json") as f:
        header, sites = parse_json_dump(f.read())
    assert header["allocator"] == "musl"
    leak = mine(sites, "leak_here")
    # only what came after the attach: 500 blocks, all live
    assert leak["allocations"] == 500 and leak["live_bytes"] == 4096 * 500
    assert mine(sites, "churn_here")["live_bytes"] == 0
    first = json.loads(open(f"{rundir}/window.json").read().splitlines()[1])
    assert "/cleak(leak_here+0x" in first["location"]

    answer = command(rundir, "detach")
    assert answer.startswith("ok detach restored_slots="), answer
    assert tracer_of(t.pid) == 0
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"bye {100 * 1000 + 500 * 4096 + 500}"], (rc, rest, err)


@needs_ptrace
@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
@pytest.mark.parametrize("layout", ["debian", "alpine"])
def test_mwrap_attach_loads_the_musl_build(spawn, tmp, layout, backend):
    """The front end (on glibc's Ruby) loads build/musl/lib/libmwrap.so
    into a musl target, names its leak first and detaches."""
    if backend == "gdb":
        skip_unless_gdb_works()
    t, _ = start_ready(spawn, cleak_argv(tmp, layout))
    out = tmp / "report.json"

    def act():
        t.send("leak 500 4096")
        t.expect("leaked 500")
        t.send("churn 1000")
        t.expect("churned")
    rc, _, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2", f"--backend={backend}",
                                "--format=json", "-o", str(out)], t.pid, act)
    assert rc == 0, err
    header, sites = parse_json_dump(out.read_text())
    assert header["allocator"] == "musl"
    leak = mine(sites, "leak_here")
    assert leak["allocations"] == 500 and leak["live_bytes"] == 4096 * 500
    first = json.loads(out.read_text().splitlines()[1])
    assert "/cleak(leak_here+0x" in first["location"]
    assert MUSL_LIB in open(f"/proc/{t.pid}/maps").read()
    assert tracer_of(t.pid) == 0
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"bye {500 * 4096 + 500}"], (rc, rest, err)


@needs_ptrace
@pytest.mark.parametrize("injector", ["glibc", "musl"])
def test_a_failed_dlopen_gives_musls_own_message(spawn, tmp, injector):
    """A staged copy without liburcu-cds: musl's dlopen fails, and its
    message (kept in musl's own thread structure, read by a call of
    dlerror) is mwrap-inject's line, with the LOAD exit code; the target
    runs on untraced."""
    staged = stage(tmp)
    os.unlink(staged / "liburcu-cds.so.8")
    t, _ = start_ready(spawn, [CLEAK])
    inject = INJECT if injector == "glibc" else MUSL_INJECT
    codes = {l.split()[0]: int(l.split()[1]) for l in run([inject, "--exit-codes"]).stdout.splitlines()}
    p = run([inject, "-p", str(t.pid), str(staged / "libmwrap.so"), "mw_attach", ""], timeout=90)
    assert p.returncode == codes["LOAD"], (p.returncode, p.stderr)
    assert p.stderr.splitlines()[-1] == (
        f"mwrap-inject: dlopen: {staged}/libmwrap.so failed in the target: Error loading "
        f"shared library liburcu-cds.so.8: No such file or directory (needed by "
        f"{staged}/libmwrap.so)"), p.stderr
    assert tracer_of(t.pid) == 0
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 500"], rest
