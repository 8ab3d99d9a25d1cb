# SPDX-License-Identifier: MIT
"""A musl target and the glibc build: musl's dlopen cannot load a
library linked against glibc, and the failure used to read as something
else ("finding the function: mw_attach: No such file or directory" and a
permissions hint, or "no shared libc mapped (a static binary?)" where
libc is mapped as ld-musl-ARCH.so.1).  mwrap-inject now says why in one
line, with its own exit code, before it touches the target.

The target is tests/targets/cleak.c built with musl-gcc
(build/musl/targets/cleak), run as Debian's musl lays it out (libc is
/usr/lib/ARCH-linux-musl/libc.so) and as Alpine does (libc is the
loader's own file, ld-musl-ARCH.so.1: a copy of it run as the loader)."""
import glob
import os
import shutil

import pytest

from conftest import (INJECT, LIB, ROOT, our_files, private_tree, proc_stat, ptrace_allowed,
                      run, start_ready, tracer_of)

pytestmark = [
    pytest.mark.fast,
    pytest.mark.skipif(ptrace_allowed() is not None,
                       reason=f"ptrace not permitted: {ptrace_allowed()}"),
]

CLEAK = os.path.join(ROOT, "build", "musl", "targets", "cleak")
needs_musl_target = pytest.mark.skipif(
    not os.path.exists(CLEAK),
    reason="no musl target: musl-gcc was not installed when built "
           "(scripts/install-deps installs musl-tools; then make)")


def exit_code(name):
    """mwrap-inject's exit code NAME, from its own table."""
    p = run([INJECT, "--exit-codes"])
    return dict((l.split()[0], int(l.split()[1])) for l in p.stdout.splitlines())[name]


def musl_loader():
    """Where musl's libc is here (musl-gcc's programs name
    /lib/ld-musl-ARCH.so.1, a link to it)."""
    found = glob.glob("/lib/ld-musl-*.so.1")
    return os.path.realpath(found[0]) if found else None


def start_cleak(spawn, tmp, layout):
    if layout == "debian":
        argv = [CLEAK]
    else:
        # Alpine: the libc is the file /lib/ld-musl-ARCH.so.1 itself
        loader = tmp / os.path.basename(glob.glob("/lib/ld-musl-*.so.1")[0])
        shutil.copy(musl_loader(), loader)
        argv = [str(loader), CLEAK]
    t, _ = start_ready(spawn, argv)
    return t


@needs_musl_target
@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
@pytest.mark.parametrize("layout", ["debian", "alpine"])
def test_glibc_library_into_musl_target_says_so_in_one_line(spawn, tmp, layout, backend):
    t = start_cleak(spawn, tmp, layout)
    t.send("leak 100 1000")
    t.expect("leaked 100")
    maps_before = open(f"/proc/{t.pid}/maps").read()
    p = run([INJECT, "-p", str(t.pid), f"--backend={backend}", LIB,
             "mw_attach", ""])
    assert p.returncode == exit_code("LIBC"), (p.returncode, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert lines[0] == "stage=libc errno=0"
    assert len(lines) == 2, lines
    libc = "ld-musl-" if layout == "alpine" else "-linux-musl/libc.so"
    assert lines[1].startswith(f"mwrap-inject: process {t.pid} runs on musl libc (")
    assert libc in lines[1]
    assert f") and {LIB} is built for glibc: load a build for musl libc " \
           "instead (make build-musl: build/musl/lib/libmwrap.so)" in lines[1]
    # untouched: never traced, nothing of ours mapped or left behind, its
    # map as it was, its blocks intact, and it runs on
    assert tracer_of(t.pid) == 0 and proc_stat(t.pid)[0] in "RS"
    assert open(f"/proc/{t.pid}/maps").read() == maps_before
    assert our_files(t.pid) == []
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == ["bye 100500"], (rc, rest, err)


@needs_musl_target
@pytest.mark.parametrize("layout", ["debian", "alpine"])
def test_mwrap_attach_gives_the_cause_and_what_to_do(spawn, tmp, layout):
    """A tree without the musl build: the front end passes the
    injector's cause on as the library's failure (8), without the
    permissions hint of an unreadable file."""
    t = start_cleak(spawn, tmp, layout)
    attach, _ = private_tree(tmp)
    p = run([attach, "-p", str(t.pid), "-d", "1"])
    assert p.returncode == 8, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert lines[0].startswith(f"mwrap-attach: process {t.pid} runs on musl libc ("), lines
    assert "is built for glibc" in lines[0] and "readable by uid" not in p.stderr
    assert any("run 'make build-musl'" in l for l in lines[1:]), lines
    assert tracer_of(t.pid) == 0 and our_files(t.pid) == []
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, _, _ = t.finish()
    assert rc == 0


@needs_musl_target
def test_mwrap_without_the_musl_build_says_what_to_build(tmp):
    """mwrap of a musl program from a tree without the musl build: 127
    (the program does not start) and what to build."""
    attach, _ = private_tree(tmp)
    p = run([os.path.join(os.path.dirname(attach), "mwrap"), CLEAK])
    assert p.returncode == 127, (p.returncode, p.stderr)
    assert p.stderr.splitlines()[-1] == \
        f"mwrap: run 'make build-musl' in the source tree: {CLEAK} runs on musl libc", p.stderr
    assert p.stdout == ""
