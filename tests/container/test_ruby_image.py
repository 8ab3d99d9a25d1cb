# SPDX-License-Identifier: MIT
"""A Ruby image the way a user has one (`make test-container`): Debian
12, Ruby 3.4.3 built from source in /usr/local (shared libruby, YJIT),
jemalloc preloaded by the image's own ENV LD_PRELOAD
(tests/container/ruby-image), running a leaking service
(tests/targets/leak.rb) with RUBYOPT=--yjit under the runtime's DEFAULT
seccomp profile.  Attached from the host by its host pid, and from
inside (podman exec) by this tree's mwrap-attach, bind-mounted with its
build: the front end then runs on the image's own Ruby 3.4.3, and the
image stays what it was made from (the .deb would bring Debian's Ruby
3.1 into it, and is what test_sidecar's image tests).

Each window's report must rank the leak's line first with its bytes,
name YJIT's compile memory as its own site (not the line that ran while
YJIT compiled it), and say jemalloc was the allocator; the service then
runs on, untraced, and exits cleanly."""
import os
import subprocess
import time

import pytest

from conftest import ROOT, first_site, is_attached, parse_json_dump, \
    run
from runtime import leak_during_window, machine_options, ruby_image

pytestmark = [
    pytest.mark.skipif(os.environ.get("MWRAP_TEST_CONTAINER") != "1",
                       reason="run by make test-container"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (podman)"),
]
VERSION = "3.4.3"
LEAK_RB = "/mwrap/tests/targets/leak.rb"
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
N, SIZE = 300, 6000             # what the service keeps on its leak line


@pytest.fixture(scope="module")
def image():
    return ruby_image(VERSION)


@pytest.fixture
def service(image, spawn):
    """leak.rb in a container of the image, RUBYOPT=--yjit, with
    SYS_PTRACE (for the attach from inside) and the default seccomp
    profile: (its Proc, name, host pid, leak line).  The container, and
    the overlay mount podman made for it, are gone at teardown whatever
    happened."""
    name = f"mwrap-rbimage-{os.getpid()}-{time.monotonic_ns()}"
    merged = None
    try:
        t = spawn(["podman", "run", "--rm", "-i", "--name", name,
                   "--cap-add=SYS_PTRACE", *machine_options(),
                   "--env", "RUBYOPT=--yjit",
                   "-v", f"{ROOT}:/mwrap:ro", image, "ruby", LEAK_RB])
        ready = t.expect("ready", timeout=60)
        line = int(ready.split("leak_line=")[1].split()[0])
        p = run(["podman", "inspect", "--format",
                 "{{.State.Pid}} {{.GraphDriver.Data.MergedDir}}", name])
        pid, merged = p.stdout.split()
        yield t, name, int(pid), line
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name],
                       capture_output=True, timeout=60)
        assert run(["podman", "container", "exists", name]).returncode == 1
        if merged:
            with open("/proc/self/mountinfo") as f:
                assert merged not in f.read(), merged


def report(json_text, *args):
    """mwrap-report's text for a JSON report: what a user reads."""
    p = run([os.path.join(ROOT, "scripts", "mwrap-report"), *args, "/dev/stdin"],
            input=json_text)
    assert p.returncode == 0, p.stderr
    return p.stdout


def serves(t, n):
    """The service still answers, and keeps what it had."""
    t.send(f"leak {n} 100")
    assert t.expect("leaked", timeout=30) == f"leaked {n}"


@pytest.mark.parametrize("where", ["host", "inside"])
def test_jemalloc_yjit_service_window(service, where):
    t, name, pid, line = service
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    assert "Seccomp:\t2\n" in status, status       # the default filter
    # the image's config preloads jemalloc; YJIT is on
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = f.read().split(b"\0")
    assert f"LD_PRELOAD={JEMALLOC}".encode() in env and \
        b"RUBYOPT=--yjit" in env, env
    with open(f"/proc/{pid}/maps") as f:
        assert JEMALLOC in f.read()
    if where == "inside":
        # the front end runs on the image's only Ruby, from source
        p = run(["podman", "exec", name, "sh", "-c",
                 "command -v ruby; test ! -e /usr/bin/ruby && "
                 "ruby -e 'print RUBY_VERSION'"])
        assert p.stdout == f"/usr/local/bin/ruby\n{VERSION}", p.stdout + p.stderr
    args = ["-p", "1" if where == "inside" else str(pid), "-d", "4",
            "--format=json"]
    argv = (["podman", "exec", name, "/mwrap/scripts/mwrap-attach"]
            if where == "inside" else
            [os.path.join(ROOT, "scripts", "mwrap-attach")])
    a = subprocess.Popen(argv + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        # the leak method's first calls: YJIT compiles its block during
        # the window (after 30 calls)
        leak_during_window(t, pid, a, N, SIZE)
        out, err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
            a.communicate(timeout=30)
    assert a.returncode == 0, err
    header, sites = parse_json_dump(out)
    # the allocator the figures come from: the preloaded jemalloc
    assert header["allocator"].startswith("jemalloc "), header
    at = f"{LEAK_RB}:{line}"
    leak = sites[at]
    # N strings, each a heap buffer of SIZE bytes (its NUL included):
    # live and in all, 5% for the array holding them as it grows.  In
    # all too: YJIT's compiling of that block (2.4 MB in all here) is not
    # the line's
    for key in ("live_bytes", "total_bytes"):
        assert N * SIZE <= leak[key] <= N * SIZE * 1.05, leak
    # plus the first call's few small blocks (3.4.3 with YJIT: 6 of
    # 648 B in all, 2 of them freed: the array's growth and the like)
    assert N <= leak["allocations"] <= N + 10, leak
    # ... and YJIT's compile memory is a site of its own, by name
    jit = sites.get("YJIT compiler")
    assert jit and jit["allocations"] > 0 and \
        jit["total_bytes"] >= 90000, sorted(sites)
    text = report(out)
    # (the report says what the JIT holds, apart from the sites)
    assert "YJIT compiler holds" in text, text
    assert text.splitlines()[0].endswith(
        f"allocator {header['allocator']}"), text
    live, location = first_site(text, "live_bytes")
    assert location == at, text
    assert live == leak["live_bytes"], text
    assert not is_attached(pid)
    with open(f"/proc/{pid}/status") as f:
        assert "TracerPid:\t0\n" in f.read()
    serves(t, 7)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0 and rest[0].startswith("bye"), rest
