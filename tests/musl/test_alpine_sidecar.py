# SPDX-License-Identifier: MIT
"""The debug-sidecar image (Debian, the installed .deb: glibc's Ruby
runs the front end) beside an Alpine-like service container (the
Alpine-like root imported as an image: the musl Ruby 3.4.3, YJIT on):
mwrap-attach in the sidecar loads the .deb's musl build into the
service through its /tmp, names the leak line, detaches, and the
service runs on.  make test-musl sets MWRAP_TEST_SIDECAR."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "container"))
from alpine import ALPINE, WANTED  # noqa: E402
from conftest import ROOT, is_attached, parse_json_dump, run  # noqa: E402
from runtime import leak_during_window, machine_options  # noqa: E402

SIDECAR = os.environ.get("MWRAP_TEST_SIDECAR", "")
pytestmark = [
    pytest.mark.skipif(not WANTED, reason="make test-musl runs these"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (podman)"),
]
LEAK_RB = "/mwrap/tests/targets/leak.rb"
N, SIZE = 300, 6000


@pytest.fixture(scope="module")
def alpine_image():
    """The Alpine-like root as a podman image, imported once per root
    (its tag is the root's stamp)."""
    assert SIDECAR, "make test-musl names the sidecar image (MWRAP_TEST_SIDECAR)"
    with open(os.path.join(os.path.dirname(ALPINE), "alpine.stamp")) as f:
        tag = f"localhost/mwrap-alpine-ruby:{f.read().strip()}"
    if run(["podman", "image", "exists", tag]).returncode != 0:
        tar = subprocess.Popen(["tar", "-C", ALPINE, "-cf", "-", "."], stdout=subprocess.PIPE)
        p = subprocess.run(["podman", "import", "-", tag], stdin=tar.stdout,
                           capture_output=True, text=True, timeout=600)
        tar.stdout.close()
        assert tar.wait(timeout=60) == 0 and p.returncode == 0, p.stderr
    return tag


def test_the_debian_sidecar_attaches_the_alpine_service(alpine_image, spawn):
    name = f"mwrap-alpine-{os.getpid()}-{time.monotonic_ns()}"
    names = [f"{name}-app"]
    try:
        t = spawn(["podman", "run", "--rm", "-i", "--name", names[0], *machine_options(),
                   "-v", f"{ROOT}/tests/targets:/mwrap/tests/targets:ro", alpine_image,
                   "/usr/local/bin/ruby", "--yjit", LEAK_RB])
        ready = t.expect("ready", timeout=60)
        nspid = int(ready.split()[1])
        line = int(ready.split("leak_line=")[1].split()[0])
        pid = int(run(["podman", "inspect", "--format", "{{.State.Pid}}",
                       names[0]]).stdout.strip())
        names.append(f"{name}-sc")
        p = subprocess.Popen(["podman", "run", "--rm", "--name", names[1],
                              f"--pid=container:{names[0]}", "--cap-add=SYS_PTRACE",
                              *machine_options(), SIDECAR, "mwrap-attach", "-p", str(nspid),
                              "-d", "4", "-v", "--format=json", "--same-seccomp"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        leak_during_window(t, pid, p, N, SIZE)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "copied the library to /tmp/mwrap-lib." in err, err
        header, sites = parse_json_dump(out)
        assert header["allocator"] == "musl", header
        first = next(l for l in out.splitlines()[1:] if '"type":"site"' in l)
        assert f'"location":"{LEAK_RB}:{line}"' in first, first
        assert sites[f"{LEAK_RB}:{line}"]["live_bytes"] >= N * SIZE
        with open(f"/proc/{pid}/maps") as f:
            loaded = {l.split(None, 5)[5].strip() for l in f
                      if len(l.split(None, 5)) == 6 and "libmwrap" in l}
        assert len(loaded) == 1 and loaded.pop().endswith("/libmwrap.so"), loaded
        assert not is_attached(pid)
        t.send("leak 1 100")
        assert t.expect("leaked", timeout=30) == "leaked 1"
    finally:
        for n in reversed(names):
            subprocess.run(["podman", "rm", "-f", "-t", "0", n], capture_output=True, timeout=60)
