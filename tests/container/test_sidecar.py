# SPDX-License-Identifier: MIT
"""The debug-sidecar image (`make test-sidecar`): a Ruby service
(tests/targets/leak.rb) in one podman container, and the image made by
`make sidecar` (the installed .deb, nothing of this tree) run beside it
with --pid=container:APP --cap-add=SYS_PTRACE and the runtime's DEFAULT
seccomp profile, as `kubectl debug --target` runs one.  mwrap-attach in
the sidecar sees the service by the pid of the shared namespace, not its
files: the library goes into the service's own /tmp through
/proc/PID/root.

MWRAP_TEST_SIDECAR names the image (make test-sidecar sets it)."""
import os
import subprocess
import time

import pytest

from conftest import ROOT, first_site, is_attached, parse_json_dump, \
    run
from runtime import app_image, leak_during_window, machine_options

SIDECAR = os.environ.get("MWRAP_TEST_SIDECAR", "")
pytestmark = [
    pytest.mark.skipif(not SIDECAR, reason="run by make test-sidecar "
                       "(MWRAP_TEST_SIDECAR names the image)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (podman)"),
]
LEAK_RB = "/mwrap/tests/targets/leak.rb"
N, SIZE = 300, 6000             # what the service keeps on its leak line


@pytest.fixture(scope="module")
def image():
    return app_image()


@pytest.fixture
def pod(image, spawn, request):
    """The service in its container, as root or as the uid its
    parametrization names: (its Proc, its pid in its own pid
    namespace, its host pid, its leak line, run_sidecar).  run_sidecar
    starts the sidecar image with ARGS as its command, in the service's
    pid namespace (with PRIVILEGES: by default SYS_PTRACE and the
    default seccomp profile), and returns its Popen.  Every container
    goes at teardown, whatever happened, from the service's start on."""
    tag = f"mwrap-sidecar-{os.getpid()}-{time.monotonic_ns()}"
    names = [f"{tag}-app"]
    sidecars = []
    uid = getattr(request, "param", 0)

    def run_sidecar(*args, privileges=("--cap-add=SYS_PTRACE",)):
        name = f"{tag}-sc{len(sidecars)}"
        names.append(name)
        p = subprocess.Popen(["podman", "run", "--rm", "--name", name,
                              f"--pid=container:{names[0]}", *privileges,
                              *machine_options(), SIDECAR, *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        sidecars.append(p)
        return p
    try:
        # the service has no capability added: the sidecar is the tracer
        t = spawn(["podman", "run", "--rm", "-i", "--name", names[0],
                   "--user", f"{uid}:{uid}", *machine_options(),
                   "-v", f"{ROOT}:/mwrap:ro", image, "ruby", LEAK_RB])
        ready = t.expect("ready", timeout=60)
        nspid = int(ready.split()[1])
        line = int(ready.split("leak_line=")[1].split()[0])
        pid = int(run(["podman", "inspect", "--format", "{{.State.Pid}}",
                       names[0]]).stdout.strip())
        yield t, nspid, pid, line, run_sidecar
    finally:
        for p in sidecars:
            if p.poll() is None:
                p.kill()
                p.communicate(timeout=30)
        for name in reversed(names):
            subprocess.run(["podman", "rm", "-f", "-t", "0", name],
                           capture_output=True, timeout=60)


def finish(p, timeout=120):
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=30)
    return p.returncode, out, err


def serves(t, n):
    """The service still answers, and keeps what it had."""
    t.send(f"leak {n} 100")
    assert t.expect("leaked", timeout=30) == f"leaked {n}"


def staged_library(pid):
    """The libmwrap.so the service maps, as it names it."""
    with open(f"/proc/{pid}/maps") as f:
        paths = {l.split(None, 5)[5].strip() for l in f
                 if len(l.split(None, 5)) == 6 and "libmwrap" in l}
    assert len(paths) == 1, paths
    return paths.pop()


NOBODY = 65534


@pytest.mark.parametrize("pod,fmt,how", [
    (0, "json", "vouched"), (NOBODY, "text", "vouched"), (0, "json", "read")],
    indirect=["pod"], ids=["json-vouched", "text-vouched-nobody",
                           "json-read"])
def test_sidecar_window_names_the_leak(pod, fmt, how, request):
    """What a user types in the sidecar: the report's first site is the
    service's leak line, with its bytes; the service (root, or nobody as
    a Kubernetes pod with runAsUser runs it) runs on after the detach,
    untraced.  The service's filter is judged by probing the
    sidecar's own, vouched for as the same profile (--same-seccomp: what
    kubectl debug --profile=general allows), or read (a privileged
    sidecar, kubectl debug --profile=sysadmin: no filter of its own,
    CAP_SYS_ADMIN)."""
    t, nspid, pid, line, run_sidecar = pod
    args = ["mwrap-attach", "-p", str(nspid), "-d", "4", "-v",
            f"--format={fmt}"]
    if how == "vouched":
        p = run_sidecar(*args, "--same-seccomp")
    else:
        p = run_sidecar(*args, privileges=("--privileged",))
    leak_during_window(t, pid, p, N, SIZE)
    rc, out, err = finish(p)
    assert rc == 0, err
    # (read, podman's default profile answers syscall -1, which the
    # injector's skipped syscalls are, with ENOSYS: "degraded")
    assert f"verdict ok {how}" in err or \
        f"verdict degraded {how}" in err, err
    where = f"{LEAK_RB}:{line}"
    if fmt == "json":
        _, sites = parse_json_dump(out)
        top = max(sites.values(), key=lambda s: s["live_bytes"])
        assert top["location"] == where, top
        live = top["live_bytes"]
        assert N <= top["allocations"] <= N + 5, top
    else:
        live, location = first_site(out, "live_bytes")
        assert location == where, out
    # each string's heap buffer is SIZE bytes; 5% for what the array
    # holding them grows by
    assert N * SIZE <= live <= N * SIZE * 1.05, live
    # the library came from the sidecar's filesystem into the service's
    # own /tmp (a copy, owned by the service's user from now on)
    lib = staged_library(pid)
    assert lib.startswith("/tmp/mwrap-lib.") and \
        lib.endswith("/libmwrap.so"), lib
    assert os.path.isfile(f"/proc/{pid}/root{lib}")
    # ... handed to the service's user, whose process removes it at exit
    assert os.stat(f"/proc/{pid}/root{os.path.dirname(lib)}").st_uid == \
        request.node.callspec.params["pod"]
    assert not is_attached(pid)
    with open(f"/proc/{pid}/status") as f:
        assert "TracerPid:\t0\n" in f.read()
    serves(t, 7)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0 and rest[0].startswith("bye"), rest


@pytest.mark.parametrize("case", ["not vouched", "another chain"])
def test_sidecar_refused(pod, case):
    """The service's seccomp filter can be neither read nor shown to be
    the sidecar's.  Without --same-seccomp the attach is refused (exit
    14) with what to do; with it, from a sidecar whose chain is not as
    long as the service's (no filter at all here), still refused: the
    vouching covers the profile, never a count that differs.  The
    service never sees us."""
    t, nspid, pid, line, run_sidecar = pod
    args = ["mwrap-attach", "-p", str(nspid), "-d", "2"]
    if case == "not vouched":
        p = run_sidecar(*args)
        says = "add --same-seccomp"
    else:
        p = run_sidecar(*args, "--same-seccomp", privileges=(
            "--cap-add=SYS_PTRACE", "--security-opt", "seccomp=unconfined"))
        says = "seccomp chain is not the target's (0 filters, 1 there)"
    rc, out, err = finish(p, timeout=60)
    assert rc == 14, err
    assert "a sidecar" in err and says in err, err
    with open(f"/proc/{pid}/maps") as f:
        assert "libmwrap" not in f.read()
    assert not is_attached(pid)
    serves(t, 5)
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0
