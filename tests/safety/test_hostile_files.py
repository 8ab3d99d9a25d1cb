# SPDX-License-Identifier: MIT
"""Files planted by another user.

mwrap-attach runs as root against processes of other users and of
containers.  A target's user (here: nobody) or any local user may plant
symlinks, FIFOs and files wherever they can write, in their own
filesystem (under /proc/PID/root an absolute symlink resolves on the
host).  Root must never write through them, nothing may hang on them,
and the target must come out detached and intact.  Each case plants at
the names earlier versions used (/tmp/mwrap-attach-UID/NAME.PID,
/tmp/mwrap.PID.ctl/.out/.dump, /tmp/mwrap.PID.TAG.FRONTPID.json) and at
the names inside today's private runtime directory."""
import os
import re
import signal
import stat
import subprocess
import time

import pytest

from conftest import (ATTACH, LEAK_RB, ROOT, TARGETS, attach, is_attached,
                      private_tmp, ptrace_allowed, remove, run, runtime_dir)

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
RUNS = range(REPEAT)
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
BLOCKER = os.path.join(TARGETS, "blocker")
NOBODY_IDS = ["--reuid=65534", "--regid=65534", "--clear-groups"]
NOBODY = ["setpriv"] + NOBODY_IDS
PLANTS = 20     # front-end pids planted for, beyond the one we know


def as_nobody(*argv):
    p = run(NOBODY + list(argv))
    assert p.returncode == 0, p.stderr


def victim_file(tmp):
    """A root-only file an attacker would like overwritten: (path,
    (content, mode, uid))."""
    v = tmp / "victim"
    v.write_text("root's secret\n")
    os.chmod(v, 0o600)
    return v, snapshot(v)


def snapshot(path):
    st = os.lstat(path)
    return open(path, "rb").read(), stat.S_IMODE(st.st_mode), st.st_uid


def unshared_nobody_target(spawn, tmp, program):
    """A container-like target: its own mount namespace, a private /tmp
    (tmp/private, nobody's) and our build/lib/ hidden, running as nobody:
    the library must be copied in.  (target, its private /tmp)."""
    private = private_tmp(tmp)
    script = (f"mount -t tmpfs none {ROOT}/build/lib && "
              f"mount --bind {private} /tmp && "
              f"exec setpriv {' '.join(NOBODY_IDS)} {program}")
    t = spawn(["unshare", "--mount", "--propagation", "private",
               "sh", "-c", script])
    t.expect("ready")
    kids = open(f"/proc/{t.pid}/task/{t.pid}/children").read().split()
    pid = int(kids[0]) if kids else t.pid
    assert not os.path.exists(f"/proc/{pid}/root/{ROOT}/build/lib/libmwrap.so")
    return t, pid, private


def front_end(tmp, argv, plant, ns_of=None):
    """Runs mwrap-attach ARGV from a shell that first runs, as nobody
    (in the mount namespace of process ns_of, if given), the shell
    commands PLANT with $1 = the front end's pid to be.
    (returncode, stderr); killed after 90 s."""
    script = tmp / "plant.sh"
    script.write_text(plant + "\n")
    enter = f"nsenter -t {ns_of} -m " if ns_of else ""
    cmd = (f"{enter}setpriv {' '.join(NOBODY_IDS)} sh -s -- $$ < {script} "
           f"&& exec {ATTACH} {argv}")
    p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True,
                       timeout=90)
    return p.returncode, p.stderr


@pytest.mark.parametrize("n", RUNS)
def test_library_copy_never_writes_through_a_planted_symlink(spawn, tmp, n):
    """17.1: the library copied into a target's /tmp, whose user planted
    absolute symlinks at every name the copy might use.  The victim
    file is untouched, and the attach works."""
    victim, before = victim_file(tmp)
    t, pid, private = unshared_nobody_target(spawn, tmp, "ruby /tmp/leak.rb")
    dirname = "/tmp/mwrap-attach-65534"     # in the target's namespace
    names = ["libmwrap.so", "liburcu-cds.so.8.0.0", "liburcu-bp.so.8.0.0",
             "liburcu-cds.so.8", "liburcu-bp.so.8"]
    plant = "\n".join(
        f"ln -s {victim} {dirname}/{name}.$(($1+{i}))"
        for name in names for i in range(-2, PLANTS))
    plant += "".join(f"\nln -s {victim} {dirname}/{name}" for name in names)
    rc, err = front_end(tmp, f"-p {pid} -d 1",
                        f"mkdir -m 0755 {dirname}\n{plant}", ns_of=pid)
    assert snapshot(victim) == before, "root wrote through a planted symlink"
    assert rc == 0, err
    assert t.p.poll() is None
    # the copy: files of root's that no one else may change, in a
    # directory made over to the target's user once the library was
    # loaded from it (its process removes it at exit), never before
    (lib,) = {l.split()[-1] for l in open(f"/proc/{pid}/maps") if "libmwrap" in l}
    staged = f"/proc/{pid}/root{os.path.dirname(lib)}"
    st = os.lstat(staged)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o755)
    for f in os.listdir(staged):
        st = os.lstat(f"{staged}/{f}")
        assert stat.S_ISREG(st.st_mode)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644), f
    t.send("leak 3 1000")
    assert t.expect("leaked")
    assert t.finish()[0] == 0


@pytest.mark.parametrize("n", RUNS)
def test_planted_fifos_hang_nothing(spawn, tmp, n):
    """17.2: FIFOs planted by the target's user at the runtime files'
    old names and at the front end's JSON names: the window's attach,
    a SIGURG dump, --keep and the target's own exit all finish."""
    t = spawn(NOBODY + ["ruby", LEAK_RB])
    t.expect("ready")
    pid = t.pid
    planted = [f"/tmp/mwrap.{pid}.{s}" for s in ("out", "dump", "ctl")]
    try:
        for path in planted:
            as_nobody("mkfifo", "-m", "0666", path)
        fifos = "\n".join(f"mkfifo /tmp/mwrap.{pid}.{tag}.$(($1+{i})).json"
                          for tag in ("final", "top")
                          for i in range(-2, PLANTS))
        rc, err = front_end(tmp, f"-p {pid} -d 1", fifos)
        assert rc == 0, err
        assert not is_attached(pid)
        p = attach(["-p", str(pid), "--keep"])
        assert p.returncode == 0, p.stderr
        os.kill(pid, signal.SIGURG)
        p = attach(["-p", str(pid), "--stats"], timeout=30)
        assert p.returncode == 0 and "ok stats" in p.stdout, p.stderr
        t.send("leak 3 1000")
        assert t.expect("leaked")
        rc, _, _ = t.finish(timeout=30)      # exits while attached
        assert rc == 0
    finally:
        for f in os.listdir("/tmp"):
            if f.startswith(f"mwrap.{pid}."):
                remove(f"/tmp/{f}")


@pytest.mark.parametrize("n", RUNS)
def test_planted_control_file_blocks_no_attach(spawn, n):
    """17.2: another user's file at the old control-file name (any local
    user can make one in /tmp) does not stop an attach."""
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    ctl = f"/tmp/mwrap.{t.pid}.ctl"
    try:
        as_nobody("touch", ctl)
        p = attach(["-p", str(t.pid), "-d", "0.5"])
        assert p.returncode == 0, p.stderr
        assert os.stat(ctl).st_size == 0 and os.stat(ctl).st_uid == 65534
    finally:
        remove(ctl)
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


@pytest.mark.parametrize("n", RUNS)
def test_stale_dump_is_not_prepended(spawn, n):
    """17.2: a dump left by an earlier process with the same pid does not
    show up in the new process's dump."""
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    stale = f"/tmp/mwrap.{t.pid}.dump"
    try:
        with open(stale, "w") as f:
            f.write("123456 7 stale-site-from-another-process:1\n")
        p = attach(["-p", str(t.pid), "--keep"])
        assert p.returncode == 0, p.stderr
        dump = re.search(r"kill -URG \d+ \(to ([^\s),]+)", p.stderr).group(1)
        os.kill(t.pid, signal.SIGURG)
        deadline = time.monotonic() + 10
        while not os.path.exists(dump) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        assert "stale-site" not in open(dump).read()
        assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    finally:
        remove(stale)
    assert t.finish()[0] == 0


def nobody_keep(spawn):
    t = spawn(NOBODY + [BLOCKER, "read"])
    t.expect("ready")
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    fd_path, name = runtime_dir(t.pid)
    assert fd_path, "no runtime directory"
    return t, fd_path


@pytest.mark.parametrize("kind", ["symlink", "fifo", "hardlink"])
@pytest.mark.parametrize("n", RUNS)
def test_files_replaced_in_the_runtime_directory(spawn, tmp, kind, n):
    """The target's user may replace the files of its own runtime
    directory: root's front end refuses what is not a regular file of
    theirs with one link, at once, writing nothing through it."""
    victim, before = victim_file(tmp)
    t, d = nobody_keep(spawn)
    for name in ("ctl", "out"):
        os.rename(f"{d}/{name}", f"{d}/{name}.old")
        if kind == "symlink":
            as_nobody("ln", "-s", str(victim), f"{d}/{name}")
        elif kind == "fifo":
            as_nobody("mkfifo", f"{d}/{name}")
        else:
            as_nobody("ln", f"{d}/{name}.old", f"{d}/{name}")
    start = time.monotonic()
    p = attach(["-p", str(t.pid), "--stats"], timeout=30)
    assert time.monotonic() - start < 20
    assert p.returncode == 12 and "refusing" in p.stderr, p.stderr
    assert snapshot(victim) == before
    for name in ("ctl", "out"):
        os.unlink(f"{d}/{name}")
        os.rename(f"{d}/{name}.old", f"{d}/{name}")
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


def test_runtime_directory_is_private(spawn):
    """The runtime directory and its files are the target user's, 0700
    and 0600; the dump left after --detach is too."""
    t, d = nobody_keep(spawn)
    st = os.stat(d)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o700)
    for name in ("ctl", "out"):
        st = os.lstat(f"{d}/{name}")
        assert stat.S_ISREG(st.st_mode)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o600)
    name = os.readlink(d)
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    st = os.lstat(f"{name}/dump")
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o600)
    assert sorted(os.listdir(name)) == ["dump"]
    t.send("x")
    assert t.finish()[0] == 0
