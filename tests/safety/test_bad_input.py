# SPDX-License-Identifier: MIT
"""Bad input and permissions: each gets one clear message and a
documented exit code, and the target is left untouched."""
import os
import subprocess
import threading
import time

import pytest

from conftest import (ATTACH, INJECT, LEAK_RB, TARGETS, attach, proc_stat, ptrace_allowed,
                      run, runtime_dir, scaled, start_leak)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
BLOCKER = os.path.join(TARGETS, "blocker")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_our_own_pid():
    p = run(["sh", "-c", f'exec {ATTACH} -p $$'])
    assert p.returncode == 2 and "myself" in p.stderr


def kernel_thread():
    """A kernel thread's pid (PF_KTHREAD in /proc/PID/stat's flags), or
    None where none is visible (a container's pid namespace)."""
    for pid in sorted(int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            flags = int(proc_stat(pid)[6])
        except (OSError, IndexError, ValueError):
            continue
        if flags & 0x00200000:
            return pid
    return None


def test_kernel_thread():
    pid = kernel_thread()               # kthreadd (2) on a host
    if pid is None:
        pytest.skip("no kernel thread in this pid namespace (a container)")
    with open(f"/proc/{pid}/comm") as f:
        comm = f.read().strip()
    p = attach(["-p", str(pid)])
    assert p.returncode == 3, p.stderr
    assert p.stderr == (f"mwrap-attach: process {pid} is a kernel thread ({comm}): "
                        "it has no user space to load a library into\n"
                        "mwrap-attach: attach to a user-space process "
                        "(ps -ef shows kernel threads in [brackets])\n")


def test_zombie():
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc_stat(child.pid)[0] == "Z":
            break
        time.sleep(0.01)
    try:
        p = attach(["-p", str(child.pid)])
        assert p.returncode == 3, p.stderr
        with open("/proc/self/comm") as f:
            me = f.read().strip()
        assert p.stderr == (f"mwrap-attach: process {child.pid} is a zombie: it has exited, "
                            f"and its parent {os.getpid()} ({me}) has not reaped it\n"
                            "mwrap-attach: there is nothing left to attach to: "
                            "attach to a live process (ps -ef)\n")
        # the injector itself takes a zombie for a process that exited,
        # not for a target that faulted (kill(pid, 0) still succeeds)
        for backend in ("ptrace", "gdb"):
            p = run([INJECT, "-p", str(child.pid), f"--backend={backend}",
                     "/lib/x86_64-linux-gnu/libc.so.6", "strlen", "x"])
            assert p.returncode == 3 and "it exited" in p.stderr, p.stderr
    finally:
        child.wait()


@pytest.mark.parametrize("path", ["/proc/mwrap-report.txt", "/nonexistent/r.txt",
                                  "/sys/kernel/mwrap.txt"])
def test_unwritable_output(spawn, path):
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    p = attach(["-p", str(t.pid), "-o", path])
    assert p.returncode == 2 and f"cannot write {path}" in p.stderr
    assert "libmwrap" not in open(f"/proc/{t.pid}/maps").read()
    assert t.finish()[0] == 0


def test_garbage_in_the_control_file(spawn):
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    d, _ = runtime_dir(t.pid)
    ctl, out = f"{d}/ctl", f"{d}/out"
    size = os.path.getsize(out)
    with open(ctl, "ab") as f:
        f.write(b"stats\x00now\n" + b"x" * 10000 + b"\n\xff\xfe\x01\nfrobnicate\n"
                b"dump relative/path\nstats\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        answers = open(out, "rb").read()[size:].decode("utf-8", "replace").splitlines()
        if len(answers) >= 6:
            break
        time.sleep(0.05)
    assert answers[0] == "error: NUL byte in command"
    assert answers[1] == "error: command line too long"
    assert answers[2].startswith("error: unknown command: ???")
    assert answers[3] == "error: unknown command: frobnicate"
    assert answers[4].startswith("error: dump wants an absolute path")
    assert answers[5].startswith("ok stats")
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


def test_control_file_symlink_never_followed(spawn, tmp):
    """A symlink at the control file's old name (/tmp/mwrap.PID.ctl) is
    neither followed nor in the way: the control file lives in a fresh
    private directory."""
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    bait = tmp / "bait"
    os.symlink(bait, f"/tmp/mwrap.{t.pid}.ctl")
    try:
        p = attach(["-p", str(t.pid), "--keep"])
        assert p.returncode == 0, p.stderr
        assert not bait.exists()
        p = attach(["-p", str(t.pid), "--stats"])
        assert p.returncode == 0
        assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
        assert not bait.exists()
    finally:
        os.unlink(f"/tmp/mwrap.{t.pid}.ctl")
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


def test_control_file_of_another_user_refused(spawn):
    """A control file that is not the target user's, in its runtime
    directory, is refused by the front end."""
    t = spawn([BLOCKER, "read"])
    t.expect("ready")
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    d, _ = runtime_dir(t.pid)
    os.chown(f"{d}/ctl", 65534, 65534)
    p = attach(["-p", str(t.pid), "--stats"])
    assert p.returncode == 12 and "refusing ctl" in p.stderr, p.stderr
    os.chown(f"{d}/ctl", 0, 0)
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


def test_other_users_process_without_cap_sys_ptrace(spawn):
    t = spawn([BLOCKER, "read"])    # ours: root's
    t.expect("ready")
    p = run(NOBODY + [ATTACH, "-p", str(t.pid), "--keep"])
    assert p.returncode == 4
    assert "uid 0" in p.stderr and "CAP_SYS_PTRACE" in p.stderr
    t.send("untouched")
    assert t.expect("got") == "got untouched"
    assert t.finish()[0] == 0


def test_files_in_the_target_belong_to_its_user(spawn):
    """A target running as nobody, attached by root: its runtime
    directory is nobody's and 0700, the control, answer and dump files
    in it nobody's and 0600, and nothing we create is world-writable."""
    t = spawn(NOBODY + [BLOCKER, "read"])
    t.expect("ready")
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    p = attach(["-p", str(t.pid), "--dump", "--format=json"])
    assert p.returncode == 0
    d, name = runtime_dir(t.pid)
    st = os.stat(d)
    assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o700)
    for suffix in ("ctl", "out"):
        st = os.stat(f"{d}/{suffix}")
        assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o600), suffix
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    st = os.stat(f"{name}/dump")
    assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o600)
    for line in open(f"/proc/{t.pid}/maps"):
        if "libmwrap" in line:
            staged = os.path.dirname(line.split()[-1])
            assert not os.stat(staged).st_mode & 0o022, staged
    t.send("x")
    assert t.finish()[0] == 0


def test_ctrl_c_ends_the_window_and_still_reports(spawn):
    t, line, _ = start_leak(spawn)
    p = subprocess.Popen([ATTACH, "-p", str(t.pid), "-d", "60"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said, out = [], []
    readers = [threading.Thread(target=lambda: said.extend(p.stderr), daemon=True),
               threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)]
    for r in readers:
        r.start()
    # the window's first progress line: the helper's answer alone may
    # come before the front end has read it (a Ctrl-C then is one
    # during the attach: exit 17)
    deadline = time.monotonic() + scaled(20)
    while not any(l.startswith("[mwrap-attach]") for l in said) and p.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    t.send("leak 50 3000")
    t.expect("leaked")
    p.send_signal(2)        # SIGINT, as Ctrl-C
    p.wait(timeout=scaled(30))
    for r in readers:
        r.join(timeout=scaled(10))
    out, err = "".join(out), "".join(said)
    assert p.returncode == 0, err
    assert f"{LEAK_RB}:{line}" in out and "detached" in err
    assert "libmwrap" in open(f"/proc/{t.pid}/maps").read()
    assert attach(["-p", str(t.pid), "--stats"]).returncode == 12
    assert t.finish()[0] == 0


def test_target_exit_while_attached_writes_the_final_dump(spawn):
    t, line, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    _, name = runtime_dir(t.pid)
    t.send("leak 20 2000")
    t.expect("leaked")
    rc, _, _ = t.finish()
    assert rc == 0
    dump = open(f"{name}/dump").read()
    assert f"{LEAK_RB}:{line}" in dump
    assert not [f for f in os.listdir(name) if f.startswith("dump.tmp")]
