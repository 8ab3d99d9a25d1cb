# SPDX-License-Identifier: MIT
"""A real container runtime (podman, `make test-container`): a Ruby
service (tests/targets/leak.rb, driven on stdin) in a container with the
runtime's DEFAULT seccomp profile and --cap-add=SYS_PTRACE, attached from
inside (podman exec) and from the host (by the host pid); and one whose
profile kills on a syscall the attach makes, refused both ways.

What this machine needs from podman (another runtime than the default,
ulimits it may set) is found out in runtime.py, never in the product."""
import json
import os
import subprocess
import time

import pytest

from conftest import ROOT, attach, helper_answered, is_attached, \
    parse_json_dump, run
from runtime import app_image, machine_options

pytestmark = [
    pytest.mark.skipif(os.environ.get("MWRAP_TEST_CONTAINER") != "1",
                       reason="run by make test-container"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (podman)"),
]
LEAK_RB = "/mwrap/tests/targets/leak.rb"
KILLED = "inotify_init1"        # made by the helper, never by Ruby


@pytest.fixture(scope="module")
def image():
    return app_image()


@pytest.fixture
def container(image, spawn, tmp):
    """Starts leak.rb in a container: (its Proc, name, host pid, leak
    line).  Removed at teardown, whatever happened."""
    names = []

    def start(*extra):
        name = f"mwrap-test-{os.getpid()}-{len(names)}"
        names.append(name)
        t = spawn(["podman", "run", "--rm", "-i", "--name", name,
                   "--cap-add=SYS_PTRACE", *machine_options(), *extra,
                   "-v", f"{ROOT}:/mwrap:ro", image,
                   "ruby", LEAK_RB])
        ready = t.expect("ready", timeout=60)
        line = int(ready.split("leak_line=")[1].split()[0])
        pid = int(run(["podman", "inspect", "--format", "{{.State.Pid}}",
                       name]).stdout.strip())
        return t, name, pid, line
    yield start
    for name in names:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name],
                       capture_output=True, timeout=60)


def inside(name, *args, timeout=60):
    """mwrap-attach run in the container (podman exec)."""
    return run(["podman", "exec", name, "/mwrap/scripts/mwrap-attach",
                *args], timeout=timeout)


def seccomp_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, v in
                (l.split(":", 1) for l in f if l.startswith("Seccomp"))}


def serves(t, n):
    """The service still answers, and keeps what it had."""
    t.send(f"leak {n} 100")
    assert t.expect("leaked", timeout=30) == f"leaked {n}"


def leak_on_top(text, line, n=300, size=6000):
    _, sites = parse_json_dump(text)
    top = max(sites.values(), key=lambda s: s["live_bytes"])
    assert top["location"] == f"{LEAK_RB}:{line}", top
    assert n * size <= top["live_bytes"] <= n * size * 1.05
    assert n <= top["allocations"] <= n + 5


@pytest.mark.parametrize("where", ["inside", "host"])
def test_default_profile(container, where):
    t, name, pid, line = container()
    st = seccomp_of(pid)
    assert st["Seccomp"] == "2", st          # the runtime's default filter
    if where == "inside":
        pid_as, tool = "1", lambda *a: inside(name, *a)
    else:
        pid_as, tool = str(pid), lambda *a: attach(list(a))
    p = tool("-p", pid_as, "--keep", "-v")
    assert p.returncode == 0, p.stderr
    # how the filter was judged: probed in a child of ours inside the
    # container (the kernel hides it there), read by root on the host
    source = "probed" if where == "inside" else "read"
    assert f"verdict ok {source}" in p.stderr or \
        f"verdict degraded {source}" in p.stderr, p.stderr
    t.send("leak 300 6000")
    t.expect("leaked")
    p = tool("-p", pid_as, "--dump", "--format=json")
    assert p.returncode == 0, p.stderr
    leak_on_top(p.stdout, line)
    p = tool("-p", pid_as, "--detach")
    assert p.returncode == 0, p.stderr
    assert "libmwrap" in open(f"/proc/{pid}/maps").read()
    serves(t, 7)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0 and rest[0].startswith("bye"), rest


@pytest.mark.parametrize("where", ["inside", "host"])
def test_window_report_names_the_leak(container, where):
    """The default window mode, as a user runs it: the report's first
    site is the leaking line."""
    t, name, pid, line = container()
    pid_as = "1" if where == "inside" else str(pid)
    cmd = ["-p", pid_as, "-d", "3", "--format=json"]
    argv = (["podman", "exec", name, "/mwrap/scripts/mwrap-attach"]
            if where == "inside" else [os.path.join(ROOT, "scripts",
                                                    "mwrap-attach")])
    a = subprocess.Popen(argv + cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not helper_answered(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        t.send("leak 300 6000")
        t.expect("leaked")
        out, err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert a.returncode == 0, err
    leak_on_top(out, line)
    serves(t, 3)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0


def test_kill_profile_refused(container, tmp):
    """A profile that allows everything but kills on a syscall the
    helper makes (what systemd's SystemCallFilter= or a hand-written
    profile can do): refused from inside and from the host, naming the
    syscall, and the service never sees us."""
    profile = tmp / "kill.json"
    profile.write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": [KILLED], "action": "SCMP_ACT_KILL_PROCESS"}],
    }))
    t, name, pid, line = container("--security-opt", f"seccomp={profile}")
    for p in (inside(name, "-p", "1", "-d", "2"),
              attach(["-p", str(pid), "-d", "2"])):
        assert p.returncode == 14, p.stderr
        assert f"would kill it on {KILLED}" in p.stderr, p.stderr
    assert "libmwrap" not in open(f"/proc/{pid}/maps").read()
    assert not is_attached(pid)
    serves(t, 5)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0
