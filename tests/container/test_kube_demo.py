# SPDX-License-Identifier: MIT
"""`make kube-demo` (dev/kube-demo): deploy/kube/demo-pod.yaml, a
leaking Ruby service (deploy/kube/leaky_web.rb) and the debug-sidecar
image in one pod with shareProcessNamespace and SYS_PTRACE, run by
podman kube play, load driven at the service from inside the pod.  The
sidecar's report names the leak line first, the service runs on after
the detach, and the pod, its containers and their mounts are gone at the
end, after success and after a Ctrl-C during the window.

MWRAP_TEST_SIDECAR names the sidecar image (make test-sidecar and make
kube-demo set it)."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ROOT, first_site

SIDECAR = os.environ.get("MWRAP_TEST_SIDECAR", "")
pytestmark = [
    pytest.mark.skipif(not SIDECAR, reason="run by make test-sidecar or "
                       "make kube-demo (MWRAP_TEST_SIDECAR names the image)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (podman)"),
]
HARNESS = os.path.join(ROOT, "dev", "kube-demo")
APP = os.path.join(ROOT, "deploy", "kube", "leaky_web.rb")
WINDOW = 6


@pytest.fixture(scope="module", autouse=True)
def usable_podman():
    """podman kube play needs podman, and catatonit for its pause image."""
    if not shutil.which("podman"):
        pytest.skip("podman missing: scripts/install-deps container")
    if not shutil.which("catatonit"):
        pytest.skip("catatonit missing (podman kube play's pause image): "
                    "apt-get install catatonit")
    p = subprocess.run(["podman", "info"], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        pytest.skip(f"podman is unusable here: {p.stderr.strip()}")


def leak_line():
    with open(APP) as f:
        lines = [i for i, l in enumerate(f, 1) if "# the leak:" in l]
    assert len(lines) == 1, lines
    return lines[0]


def pod_name():
    return f"mwrap-kt-{os.getpid()}-{time.monotonic_ns() % 10**9}"


def harness(pod, tmp, check=None):
    """dev/kube-demo in its own session (a Ctrl-C reaches its group),
    its output in tmp/out; TMPDIR is tmp/work, which it must leave as it
    found it (its lock file aside).  SIGINT's action is the default a
    terminal gives it: a suite started in the background (`make test &`
    in a script) has it ignored, which a shell cannot trap again."""
    env = dict(os.environ, MWRAP_KUBE_POD=pod,
               MWRAP_KUBE_WINDOW=str(WINDOW), TMPDIR=f"{tmp}/work")
    if check:
        env["MWRAP_KUBE_CHECK"] = check
    os.makedirs(f"{tmp}/work", exist_ok=True)
    out = open(f"{tmp}/out", "w")
    try:
        return subprocess.Popen([HARNESS, SIDECAR], stdout=out,
                                stderr=subprocess.STDOUT, env=env,
                                start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finally:
        out.close()


def finish(p, timeout):
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=200)
        raise


def containers(pod):
    """Full ids of the pod's containers, and their overlay mount points."""
    ids = subprocess.run(["podman", "ps", "-a", "--no-trunc", "--filter",
                          f"pod={pod}", "--format", "{{.ID}}"],
                         capture_output=True, text=True,
                         timeout=60).stdout.split()
    merged = []
    for cid in ids:
        merged.append(subprocess.run(
            ["podman", "inspect", "--format",
             "{{.GraphDriver.Data.MergedDir}}", cid],
            capture_output=True, text=True, timeout=60).stdout.strip())
    return ids, [m for m in merged if m]


def nothing_left(pod, ids, merged, tmp):
    assert subprocess.run(["podman", "pod", "exists", pod],
                          timeout=60).returncode == 1, f"pod {pod} left"
    for cid in ids:
        assert subprocess.run(["podman", "container", "exists", cid],
                              timeout=60).returncode == 1, f"{cid} left"
    with open("/proc/self/mountinfo") as f:
        mounts = f.read()
    for word in ids + merged:
        assert word not in mounts, f"{word} still mounted"
    assert os.listdir(f"{tmp}/work") in ([], ["mwrap-kube-demo.lock"]), \
        os.listdir(f"{tmp}/work")


def test_kube_demo_names_the_leak(tmp):
    """The report's first site is leaky_web.rb's leak line, at
    /app/leaky_web.rb in the service's container, its blocks the
    remembered responses; the service's container runs on
    untraced after the detach and answers; then nothing is left."""
    pod = pod_name()
    # run by the harness after the report, before the pod goes
    check = (f"{{ podman inspect --format '{{{{.State.Status}}}}' $POD-app; "
             f"grep TracerPid /proc/$APP_PID/status; "
             f"grep -c libmwrap /proc/$APP_PID/maps; "
             f"podman ps -a --no-trunc --filter pod=$POD --format "
             f"'{{{{.ID}}}} {{{{.Names}}}}'; "
             f"podman ps -a -q --filter pod=$POD | xargs podman inspect "
             f"--format 'merged {{{{.GraphDriver.Data.MergedDir}}}}'; "
             f"}} >{tmp}/check")
    p = harness(pod, tmp, check)
    rc = finish(p, timeout=480)
    with open(f"{tmp}/out") as f:
        out = f.read()
    assert rc == 0, out
    live, count, where = first_site(out, "live_bytes", "live_count")
    assert where == f"/app/leaky_web.rb:{leak_line()}", out
    # about 500 requests a second, half remembered: over 1 MB in the window
    assert live >= 1 << 20, out
    # each block a remembered response (4,103 B of body and its header),
    # its buffer up to twice that (Ruby grows the shared copy to append
    # " "), and the cache's own table: within 4,096 B and 9,000 B a block
    assert 4096 <= live / count <= 9000, out
    assert "== mwrap-attach exited 0" in out, out
    assert re.search(r"^== after the window: .* answers: HTTP/1.1 200 OK$",
                     out, re.M), out
    with open(f"{tmp}/check") as f:
        check_out = f.read().splitlines()
    assert check_out[0] == "running", check_out
    assert check_out[1] == "TracerPid:\t0", check_out
    # libmwrap.so stays mapped, inert (its hooks removed)
    assert int(check_out[2]) >= 1, check_out
    rows = [l.split() for l in check_out[3:] if not l.startswith("merged ")]
    merged = [l.split()[1] for l in check_out[3:] if l.startswith("merged ")]
    ids, names = [r[0] for r in rows], sorted(r[1] for r in rows)
    assert f"{pod}-app" in names and f"{pod}-mwrap" in names, names
    assert len(ids) == 3, check_out        # and the infra container
    assert len(merged) >= 2, check_out
    nothing_left(pod, ids, merged, tmp)


def test_kube_demo_interrupted(tmp):
    """A Ctrl-C (SIGINT to the harness's process group) during the
    window: the harness exits 130 and takes the pod down with it."""
    pod = pod_name()
    p = harness(pod, tmp)
    deadline = time.monotonic() + 300
    ids, merged = [], []
    try:
        while time.monotonic() < deadline and p.poll() is None:
            with open(f"{tmp}/out") as f:
                if "== load:" in f.read():
                    break
            time.sleep(0.2)
        with open(f"{tmp}/out") as f:
            assert "== load:" in f.read(), f"no load started: {f.read()}"
        ids, merged = containers(pod)
        assert len(ids) == 3 and len(merged) >= 2, (ids, merged)
        time.sleep(2)                   # inside the window
        os.killpg(p.pid, signal.SIGINT)
        rc = finish(p, timeout=200)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=60)
            subprocess.run(["podman", "pod", "rm", "-f", "-t", "0", pod],
                           capture_output=True, timeout=120)
    with open(f"{tmp}/out") as f:
        out = f.read()
    assert rc == 130, out
    assert "== podman kube down" in out, out
    nothing_left(pod, ids, merged, tmp)
