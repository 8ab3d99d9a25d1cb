# SPDX-License-Identifier: MIT
"""An Alpine-like root (dev/ruby-src alpine 3.4.3-musl: musl's libc is
/lib/ld-musl-ARCH.so.1, no glibc, a musl Ruby in /usr/local) and the
processes tests run in it.  The cached root is never written: each test
has a run directory, whose tmp/ is bound over the root's /tmp and which
is the root's /mnt (our tree's copy is /mnt/src), in a mount namespace
of the process's own that ends with it."""
import os
import shutil
import subprocess

from lib.paths import ROOT

ALPINE = os.environ.get("MWRAP_MUSL_ROOT", "")
# the musl build, which `make build-musl` leaves here
MUSL_BUILD = os.path.join(ROOT, "build", "musl")
PATH = "/usr/local/bin:/usr/bin:/bin"
# where our tree's copy is, inside the root
SRC = "/mnt/src"
# the host's, run with PATH (the root's) already set
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"

# mounts the run directory in the root (and the host's / read-only at
# /mnt/host where the run directory has host/: gdb's, see with_gdb), then
# runs "$@" (K=V words, then chroot ROOT ARGV) with an environment of its
# own
ENTER = ('r=$1 run=$2; shift 2; '
         'mount --bind "$run/tmp" "$r/tmp"; mount --bind "$run" "$r/mnt"; '
         'if [ -d "$run/host" ]; then mount --bind -o ro / "$r/mnt/host"; fi; '
         'mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"; '
         'exec env -i PATH=' + PATH + ' HOME=/root LANG=C.UTF-8 "$@"')


# make test-musl sets it, with MWRAP_MUSL_ROOT; make test skips these
WANTED = os.environ.get("MWRAP_TEST_MUSL") == "1"


def missing():
    """What the musl tests lack here, or None."""
    if not ALPINE:
        return "no Alpine-like root (MWRAP_MUSL_ROOT): make test-musl makes it"
    if not os.path.exists(os.path.join(ALPINE, "usr", "local", "bin", "ruby")):
        return f"{ALPINE} has no Ruby: make test-musl builds it"
    if not os.path.exists(os.path.join(MUSL_BUILD, "lib", "libmwrap.so")):
        return "no musl build: make build-musl"
    return None


def make_run(tmp, musl=True, native=False):
    """The run directory under TMP: tmp/ (mode 1777) and src/, a copy of
    our scripts, VERSION, the test targets, the glibc build and, when
    MUSL, the musl build; NATIVE: the musl build alone, where make run on
    Alpine leaves its build (build/lib, build/bin)."""
    run = tmp / "alpine-run"
    (run / "tmp").mkdir(parents=True)
    os.chmod(run / "tmp", 0o1777)
    src = run / "src"
    shutil.copytree(os.path.join(ROOT, "scripts"), src / "scripts", symlinks=True)
    shutil.copytree(os.path.join(ROOT, "tests", "targets"), src / "tests" / "targets",
                    ignore=shutil.ignore_patterns("*.c", "*.o"))
    shutil.copy2(os.path.join(ROOT, "VERSION"), src)
    builds = ["build/lib", "build/bin"] + (["build/musl/lib", "build/musl/bin"] if musl else [])
    for b in builds:
        shutil.copytree(os.path.join(ROOT, b), src / b, symlinks=True)
    if native:
        for kind in ("lib", "bin"):
            shutil.rmtree(src / "build" / kind)
            os.rename(src / "build" / "musl" / kind, src / "build" / kind)
        os.rmdir(src / "build" / "musl")
    os.chmod(run, 0o755)
    return run


# Debian's gdb, run in the root by the host's loader with the host's
# libraries (Alpine's own, `apk add gdb`, is out of reach here: Debian
# has no musl gdb): /mnt/bin/gdb, from the host's / at /mnt/host
GDB_WRAPPER = """#!/bin/sh
h=/mnt/host
export PYTHONHOME=$h/usr GCONV_PATH=$h{gconv}
exec $h{loader} --library-path {libs} $h{gdb} "$@"
"""
# the PATH that finds it first
GDB_PATH = "/mnt/bin:" + PATH


def with_gdb(run):
    """Gives run directory RUN a gdb for the root (GDB_PATH finds it)."""
    gdb = os.path.realpath(shutil.which("gdb"))
    loader = os.path.realpath(f"/lib/{os.uname().machine}-linux-gnu/"
                              + {"x86_64": "ld-linux-x86-64.so.2",
                                 "aarch64": "ld-linux-aarch64.so.1"}[os.uname().machine])
    libs = ":".join(f"/mnt/host{d}/{os.uname().machine}-linux-gnu" for d in ("/lib", "/usr/lib"))
    gconv = f"/usr/lib/{os.uname().machine}-linux-gnu/gconv"
    (run / "host").mkdir()
    (run / "bin").mkdir(exist_ok=True)
    (run / "bin" / "gdb").write_text(GDB_WRAPPER.format(loader=loader, libs=libs, gdb=gdb, gconv=gconv))
    os.chmod(run / "bin" / "gdb", 0o755)


def in_root(run, argv, env=None):
    """ARGV run in the root (its path as the root sees it) with RUN
    mounted: the argv of a process whose pid is ARGV's own (every step
    execs)."""
    words = [f"{k}={v}" for k, v in (env or {}).items()]
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-euc", ENTER,
            "sh", ALPINE, str(run), *words, CHROOT, ALPINE, *argv]


def inside(pid, argv, timeout):
    """ARGV run in process PID's mount namespace and root (as `kubectl
    exec` runs a command in a container): (exit code, stdout, stderr)."""
    p = subprocess.run(["nsenter", "-t", str(pid), "-m", "-r", "-w", *argv],
                       env={"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8"},
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr
