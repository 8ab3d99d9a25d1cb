# SPDX-License-Identifier: MIT
"""What this machine needs from podman to run our test containers (the
runtime there is, ulimits it may set), found out here, never in the
product; and the Ruby service's image (tests/container/image)."""
import os
import resource
import shutil
import time

import pytest

from conftest import ROOT, helper_answered, run


def has_cap(bit):
    with open("/proc/self/status") as f:
        caps = next(l for l in f if l.startswith("CapEff:"))
    return int(caps.split()[1], 16) >> bit & 1


def machine_options():
    """podman run options this machine needs: the runtime there is (crun
    is podman's default, runc may be all there is), and ulimits within
    our hard limits when we cannot raise them (no CAP_SYS_RESOURCE:
    podman's default nofile is above them)."""
    opts = []
    if not shutil.which("crun") and shutil.which("runc"):
        opts += ["--runtime", "runc"]
    if not has_cap(24):
        for name, res in (("nofile", resource.RLIMIT_NOFILE),
                          ("nproc", resource.RLIMIT_NPROC)):
            hard = resource.getrlimit(res)[1]
            if hard != resource.RLIM_INFINITY:
                hard = min(hard, 32768) if name == "nproc" else hard
                opts += ["--ulimit", f"{name}={hard}:{hard}"]
    return opts


def app_image():
    """The Ruby service's image (this host's Debian, ruby, liburcu),
    built or reused by tests/container/image; skips without podman."""
    if not shutil.which("podman"):
        pytest.skip("podman missing: scripts/install-deps container")
    p = run([os.path.join(ROOT, "tests", "container", "image")], timeout=900)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def ruby_image(version="3.4.3"):
    """A production-like Ruby image (Ruby VERSION built from source in
    /usr/local, jemalloc preloaded by the image's ENV LD_PRELOAD), built
    or reused by tests/container/ruby-image; skips without podman."""
    if not shutil.which("podman"):
        pytest.skip("podman missing: scripts/install-deps container")
    p = run([os.path.join(ROOT, "tests", "container", "ruby-image"), version],
            env={"MWRAP_PODMAN_RUN": " ".join(machine_options())},
            timeout=1800)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def leak_during_window(t, pid, attach, n, size):
    """Once the window of ATTACH (the mwrap-attach Popen) is open (pid's
    helper answered), the service t leaks n strings of size bytes on its
    leak line."""
    deadline = time.monotonic() + 60
    while not helper_answered(pid) and attach.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert helper_answered(pid), "the attach never answered"
    t.send(f"leak {n} {size}")
    t.expect("leaked", timeout=30)
