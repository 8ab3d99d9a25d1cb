# SPDX-License-Identifier: MIT
"""The control channel's files and the window's lease: the helper's private runtime directory, a
target that detaches itself when the front end dies mid-window, re-attach
with a copied library any number of times, and the library staged with
its liburcu where the target has none."""
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import time

import pytest

from conftest import (ATTACH, ROOT, attach, helper_answered, is_attached,
                      private_tmp, ptrace_allowed, run, runtime_dir,
                      skip_unless_gdb_works, start_leak, wait_injector)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
LEASE_BOUND = 40        # the lease is 10 s; a loaded machine gets slack


def wait_detached(pid, bound=LEASE_BOUND, settle=3.0):
    """Seconds until pid has no helper (without renewing its lease) and
    still has none SETTLE seconds later, or None after bound.  A front end
    Ctrl-C'd during the injection leaves its guarded calls to finish in
    the target: the helper may start only after our first look."""
    start = time.monotonic()
    gone = None
    while time.monotonic() - start < bound:
        if is_attached(pid):
            gone = None
        elif gone is None:
            gone = time.monotonic()
        elif time.monotonic() - gone >= settle:
            return gone - start
        time.sleep(0.25)
    return None


def leak_reported(t, line, args=()):
    """A short window over a small leak names the leaking line."""
    return window(t, line, [ATTACH, "-p", str(t.pid), "-d", "2", *args])


def window(t, line, argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not helper_answered(t.pid) and p.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    t.send("leak 20 3000")
    t.expect("leaked")
    out, err = p.communicate(timeout=90)
    assert p.returncode == 0, err
    assert f"leak.rb:{line}" in out, out + err
    return err


def test_control_file_read_from_the_start_after_truncation(spawn):
    """A control file truncated under the helper (by its user, or by a
    full disk's cleanup) is read again from its start, not ignored."""
    t, _, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    d, _ = runtime_dir(t.pid)
    # (earlier versions: /tmp/mwrap.PID.ctl and .out)
    ctl, out = (f"{d}/ctl", f"{d}/out") if d else (
        f"/tmp/mwrap.{t.pid}.ctl", f"/tmp/mwrap.{t.pid}.out")
    with open(ctl, "a") as f:
        f.write("stats\nstats\n")
    deadline = time.monotonic() + 10
    while open(out).read().count("ok stats") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.truncate(ctl, 0)
    size = os.path.getsize(out)
    with open(ctl, "a") as f:
        f.write("stats\n")
    deadline = time.monotonic() + 10
    while "ok stats" not in open(out).read()[size:] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "ok stats" in open(out).read()[size:]
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    assert t.finish()[0] == 0


def test_a_top_dump_leaves_out_mallocs_view(spawn):
    """A window's samples (dump --top, twice a second) do not ask glibc
    for mallinfo2, which walks every arena under its lock; a whole dump
    still carries malloc's view."""
    t, line, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    d, _ = runtime_dir(t.pid)
    assert d, "no runtime directory"
    t.send("leak 100 10000")
    t.expect("leaked")
    headers = {}
    for name, cmd in (("top.json", "dump --json --top 3"), ("all.json", "dump --json")):
        with open(f"{d}/ctl", "a") as f:
            f.write(f"{cmd} {name}\n")
        # written to a scratch file, then renamed to its name
        deadline = time.monotonic() + 10
        while not os.path.exists(f"{d}/{name}") and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(f"{d}/{name}") as f:
            headers[name] = json.loads(f.readline())
    assert "malloc_in_use_bytes" not in headers["top.json"], headers
    assert headers["top.json"]["tracked_live_bytes"] >= 1_000_000, headers
    assert headers["all.json"]["malloc_in_use_bytes"] > 0, headers
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    assert t.finish()[0] == 0


def test_window_leaves_no_file(spawn):
    """A window's runtime directory goes with it; --keep's keeps only
    the final dump, named in the attach's output."""
    t, line, _ = start_leak(spawn)
    before = set(os.listdir("/tmp"))
    leak_reported(t, line)
    assert not is_attached(t.pid)
    assert {f for f in set(os.listdir("/tmp")) - before
            if f.startswith((f"mwrap.{t.pid}.", "mwrap-lib."))} == set()
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0
    assert f"kill -URG {t.pid} (to /tmp/mwrap.{t.pid}." in p.stderr
    _, name = runtime_dir(t.pid)
    p = attach(["-p", str(t.pid), "--detach"])
    assert p.returncode == 0 and f"{name}/dump" in p.stderr
    assert os.listdir(name) == ["dump"]
    assert t.finish()[0] == 0


# SIGINT to the whole group, as Ctrl-C does, at a random moment of the
# injection; the others in the window.
@pytest.mark.parametrize("sig", ["KILL", "HUP", "USR1", "INT-early"])
@pytest.mark.parametrize("n", range(2))
def test_front_end_death_mid_window_detaches_the_target(spawn, sig, n):
    """17.5: mwrap-attach killed mid-window (or Ctrl-C'd during the
    injection): the target detaches itself within seconds, and the next
    mwrap-attach works."""
    t, line, _ = start_leak(spawn)
    # a front end under nohup (SIGHUP ignored, as a harness may run us)
    # would rightly survive the HUP: give it the default a terminal's has
    p = subprocess.Popen([ATTACH, "-p", str(t.pid), "-d", "300"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP,
                                                          signal.SIG_DFL))
    try:
        if sig == "INT-early":
            # True too once the target's helper is up: a poll starved on a loaded
            # machine can miss a short injection (the Ctrl-C then comes just
            # after it, which the lease must handle all the same)
            assert wait_injector(p.pid, 30, lambda: helper_answered(t.pid)), \
                "mwrap-inject never ran"
            time.sleep(random.uniform(0, 0.02))
            os.killpg(p.pid, signal.SIGINT)
        else:
            runtime_dir(t.pid, timeout=30)
            time.sleep(1.5)
            assert is_attached(t.pid), "never attached"
            os.kill(p.pid, getattr(signal, "SIG" + sig))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
    took = wait_detached(t.pid)
    assert took is not None, "the target stayed attached"
    print(f"detached {took:.1f} s after the front end's death")
    t.send("leak 1 100")
    t.expect("leaked")
    leak_reported(t, line)
    assert t.finish()[0] == 0


def killed_mid_window(t):
    """Starts a window on T and SIGKILLs its mwrap-attach 1.5 s in;
    returns the front end's pid and the moment it died."""
    p = subprocess.Popen([ATTACH, "-p", str(t.pid), "-d", "300"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        runtime_dir(t.pid, timeout=30)
        time.sleep(1.5)
        assert is_attached(t.pid), "never attached"
    finally:
        p.kill()
        p.wait(timeout=10)
    return p.pid, time.monotonic()


def test_an_attach_after_the_front_end_died_waits_then_works(spawn):
    """After a SIGKILLed window, the next attach says the window's
    mwrap-attach is gone, waits for that window to end by itself (its
    lease, renewed by no one), then attaches: within 15 s of the death
    (5 s more allowed for a loaded machine)."""
    t, line, _ = start_leak(spawn)
    _, died = killed_mid_window(t)
    p = run([ATTACH, "-p", str(t.pid), "-d", "1"], timeout=60)
    took = time.monotonic() - died
    print(f"attached {took:.1f} s after the front end's death")
    assert p.returncode == 0, p.stderr
    assert "has a window whose mwrap-attach is gone: waiting for it to end" in p.stderr, p.stderr
    assert took < 20
    t.send("leak 1 100")
    t.expect("leaked")
    leak_reported(t, line)
    assert t.finish()[0] == 0


def test_a_live_window_is_refused_naming_its_owner(spawn):
    """25.1: an attach during someone's window names that mwrap-attach
    and says to wait, never to --detach (which would end their window)."""
    t, _, _ = start_leak(spawn)
    p = subprocess.Popen([ATTACH, "-p", str(t.pid), "-d", "6"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        runtime_dir(t.pid, timeout=30)
        time.sleep(1.5)
        q = attach(["-p", str(t.pid), "-d", "1"])
        assert q.returncode == 13
        assert f"the window of mwrap-attach (pid {p.pid}) runs on it" in q.stderr
        assert "wait for that window's report" in q.stderr
        assert "--detach" not in q.stderr
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    assert t.finish()[0] == 0


def test_keep_has_no_lease(spawn):
    t, _, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    time.sleep(13)
    assert is_attached(t.pid)
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    assert t.finish()[0] == 0


def unshared_target(spawn, tmp, mounts, user=None):
    """A Ruby target in its own mount namespace after MOUNTS (shell
    commands), running leak.rb from its private /tmp: (target, leak
    line)."""
    private = private_tmp(tmp)
    run_as = f"setpriv --reuid={user} --regid={user} --clear-groups " if user else ""
    script = " && ".join(mounts + [f"mount --bind {private} /tmp",
                                   f"exec {run_as}ruby /tmp/leak.rb"])
    t = spawn(["unshare", "--mount", "--propagation", "private",
               "sh", "-c", script])
    ready = t.expect("ready")
    return t, int(ready.split()[2].split("=")[1])


def lib_mapped(pid):
    return sorted({line.split()[-1] for line in open(f"/proc/{pid}/maps")
                   if "libmwrap" in line})


@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
@pytest.mark.parametrize("mode", ["shared", "copied"])
def test_reattach_any_number_of_times(spawn, tmp, mode, backend):
    """17.6: attach, window, detach, five times, with the library shared
    or copied into the target's filesystem: each works, and the one
    library loaded at first is the one reused."""
    if backend == "gdb":
        skip_unless_gdb_works()
    mounts = [f"mount -t tmpfs none {ROOT}/build/lib"] if mode == "copied" else []
    t, line = unshared_target(spawn, tmp, mounts)
    first = None
    for _ in range(5):
        err = leak_reported(t, line, ["--backend", backend, "-v"])
        if mode == "copied" and first is None:
            assert "copied the library" in err
        if first is not None:
            assert "copied the library" not in err
        mapped = lib_mapped(t.pid)
        assert len(mapped) == 1 and "(deleted)" not in mapped[0], mapped
        first = first or mapped
        assert mapped == first
    assert t.finish()[0] == 0


def test_reattach_after_the_copy_was_deleted(spawn, tmp):
    """A tmp cleaner removed the copy still mapped in the target: the
    next attach loads a fresh copy and works."""
    t, line = unshared_target(spawn, tmp, [f"mount -t tmpfs none {ROOT}/build/lib"])
    leak_reported(t, line)
    (path,) = lib_mapped(t.pid)
    staged = os.path.dirname(path)
    for f in os.listdir(f"/proc/{t.pid}/root{staged}"):
        os.unlink(f"/proc/{t.pid}/root{staged}/{f}")
    err = leak_reported(t, line, ["-v"])
    assert "was deleted" in err
    assert t.finish()[0] == 0


@pytest.mark.parametrize("n", range(2))
def test_library_copy_goes_with_its_target(spawn, tmp, n):
    """The copy made for a target of another user
    (nobody, in its own mount namespace) is made over to that user once
    loaded (files still root's, read-only); a re-attach reuses it; a fork
    child's exit leaves it to its parent; the target's exit removes it
    (it used to stay in the target's /tmp for ever)."""
    t, line = unshared_target(spawn, tmp,
                              [f"mount -t tmpfs none {ROOT}/build/lib"],
                              user=65534)
    assert "copied the library" in leak_reported(t, line, ["-v"])
    (path,) = lib_mapped(t.pid)
    staged = tmp / "private" / os.path.basename(os.path.dirname(path))
    st = os.lstat(staged)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o755)
    for f in os.listdir(staged):
        st = os.lstat(staged / f)
        assert stat.S_ISREG(st.st_mode), f
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644), f
    err = leak_reported(t, line, ["-v"])
    assert "copied the library" not in err and f"reusing {path}" in err
    assert lib_mapped(t.pid) == [path]
    t.send("fork")
    t.expect("forked child exit=0")
    assert staged.is_dir(), "a fork child removed its parent's copy"
    rc, rest, _ = t.finish()
    assert rc == 0
    deadline = time.monotonic() + 10
    while staged.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not staged.exists(), f"left after the target's exit: " \
        f"{sorted(os.listdir(staged))}"


def test_library_copy_not_loaded_is_removed(spawn, tmp):
    """A copy the target never loaded (the injection failed: blocker
    inlibc, always inside libc, has no safe point within --timeout 1) is
    removed by the front end at once, never handed over.  Between two of
    its calls into libc it has a safe window of a few instructions: a
    search that finds it attaches, and proves nothing, so again."""
    for attempt in range(3):
        t, private = blocker_unshared(spawn, tmp, f"private{attempt}")
        p = attach(["-p", str(t.pid), "-d", "1", "--timeout", "1", "-v"])
        left = [f for f in os.listdir(private) if f.startswith("mwrap-lib.")]
        os.kill(t.pid, signal.SIGTERM)
        rc, rest, _ = t.finish()
        assert rc == 0 and rest == ["inlibc usr1=0 rt=0"]
        if p.returncode != 0:
            break
    assert p.returncode != 0, "three searches found the safe window"
    assert "copied the library" in p.stderr, p.stderr
    assert "which the target did not load" in p.stderr, p.stderr
    assert left == [], "the copy outlived the failed injection"


def blocker_unshared(spawn, tmp, name):
    """blocker inlibc as uid 65534 in a mount namespace of its own, with
    no build/lib and tmp/NAME for its /tmp: (its Proc, tmp/NAME)."""
    private = private_tmp(tmp, name=name)
    # its own copy, in its /tmp: the tree itself may be under our /tmp
    shutil.copy(os.path.join(ROOT, "build", "targets", "blocker"), private / "blocker")
    os.chmod(private / "blocker", 0o755)
    t = spawn(["unshare", "--mount", "--propagation", "private", "sh", "-c",
               f"mount -t tmpfs none {ROOT}/build/lib && "
               f"mount --bind {private} /tmp && "
               f"exec setpriv --reuid=65534 --regid=65534 --clear-groups "
               f"/tmp/blocker inlibc"])
    t.expect("ready")
    return t, private


def hide_liburcu():
    """Mount commands that leave the namespace without a system liburcu
    (as a container with Ruby but no liburcu)."""
    libs = set()
    for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
              "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/lib64"):
        if os.path.isdir(d):
            for f in os.listdir(d):
                path = os.path.realpath(f"{d}/{f}")
                if f.startswith("liburcu") and os.path.isfile(path):
                    libs.add(path)
    return [f"mount --bind /dev/null {p}" for p in sorted(libs)]


@pytest.fixture
def installed():
    """`make install` into a DESTDIR in build/ (seen from the target's
    namespace, unlike /tmp): the installed mwrap-attach."""
    dest = os.path.join(ROOT, "build", f"install-test.{os.getpid()}")
    p = run(["make", "-s", "-C", ROOT, "install-product",
             f"DESTDIR={dest}", "PREFIX=/opt/mwrap"], timeout=120)
    assert p.returncode == 0, p.stderr
    yield f"{dest}/opt/mwrap/bin/mwrap-attach"
    shutil.rmtree(dest, ignore_errors=True)


@pytest.mark.parametrize("layout", ["build", "install"])
@pytest.mark.parametrize("where", ["inside", "host"])
def test_target_without_liburcu(spawn, tmp, request, layout, where):
    """15.3: the tool in a container that has Ruby but no liburcu (and no
    gdb): libmwrap.so's liburcu travels with it, attached from inside
    the container and from the host, from the build tree and from
    `make install`'s layout."""
    if where == "inside" and ROOT.startswith("/tmp/"):
        pytest.skip("the source tree is under /tmp, which the target's own "
                    "/tmp hides: no tool to run inside its namespace")
    tool = request.getfixturevalue("installed") if layout == "install" else ATTACH
    t, line = unshared_target(spawn, tmp, hide_liburcu())
    probe = run(["nsenter", "-t", str(t.pid), "-m", "sh", "-c",
                 "ldconfig -p | grep -c liburcu-cds; "
                 "cat /usr/lib/x86_64-linux-gnu/liburcu-cds.so.8 | wc -c"])
    assert probe.stdout.split()[-1] == "0", "liburcu still readable"
    enter = ["nsenter", "-t", str(t.pid), "-m"] if where == "inside" else []
    window(t, line, enter + [tool, "-p", str(t.pid), "-d", "2"])
    assert t.finish()[0] == 0

