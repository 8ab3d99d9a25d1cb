# SPDX-License-Identifier: MIT
"""Resource limits: an attach that cannot get its
thread, memory or table fails cleanly with the reason, and nothing in
the target aborts.  liburcu used to: cds_lfht_new(CDS_LFHT_AUTO_RESIZE)
starts a worker thread and calls abort() when it cannot.

The target is tests/targets/prelive.c (a C program that keeps 1000
blocks and obeys alloc/churn/free lines); after every attach, failed or
not, it must still allocate, free and exit 0 with its blocks intact."""
import os
import resource
import subprocess
import time

import pytest

from conftest import MWRAP, TARGETS, attach, needs_ptrace, run

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
PRELIVE = os.path.join(TARGETS, "prelive")
MIB = 1 << 20

# What a clean failure says: the helper thread refused, the table or the
# library could not be had.  Exit codes: 8 library, 9 injection.
CLEAN = ("mw_attach failed in the target: Resource temporarily unavailable",
         "cannot create the site table",
         "the target could not load the library")


def vm_size(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


def set_as_limit(pid, limit):
    """Lowers (or raises) the soft limit: the hard one stays, so it can
    be raised again without CAP_SYS_RESOURCE."""
    p = run(["prlimit", f"--pid={pid}", f"--as={limit}:"], timeout=10)
    assert p.returncode == 0, p.stderr


def still_well(t):
    """The target allocates, frees and exits 0 with its blocks intact."""
    t.send("alloc 1000 64")
    t.expect("allocated 1000", timeout=10)
    t.send("churn 10000")
    t.expect("churned 10000", timeout=10)
    t.send("free 50")
    t.expect("freed", timeout=10)
    rc, rest, err = t.finish()
    assert "Unrecoverable error" not in err, err
    assert rc == 0 and rest == ["bye OK"], (rc, rest, err)


def attach_outcome(pid):
    """Attach for a short window: "ok" or the clean failure's message."""
    p = attach(["-p", str(pid), "-d", "0.3"], timeout=60)
    if p.returncode == 0:
        assert "mwrap report" in p.stdout, p.stdout
        return "ok"
    msg = p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""
    assert p.returncode in (8, 9), (p.returncode, p.stderr)
    assert any(c in msg for c in CLEAN), p.stderr
    return msg


@needs_ptrace
@pytest.mark.parametrize("n", range(REPEAT))
def test_attach_under_an_address_space_limit(spawn, n):
    """RLIMIT_AS lowered to the target's size plus 2 to 48 MiB: too little
    for the helper's stack, then for the site table, then enough.  Before
    the fix the first margin with room for the helper but not for
    liburcu's resize worker killed the target (SIGABRT from
    urcu_workqueue_create; the front end: "exited during the attach")."""
    outcomes = {}
    for extra in (2, 8, 12, 16, 20, 24, 32, 48):
        t = spawn([PRELIVE, "1000", "64"])
        t.expect("ready")
        set_as_limit(t.pid, vm_size(t.pid) + extra * MIB)
        outcomes[extra] = attach_outcome(t.pid)
        assert t.p.poll() is None, (extra, outcomes, t.p.stderr.read())
        still_well(t)
    assert outcomes[48] == "ok", outcomes
    assert outcomes[2] != "ok", outcomes


@needs_ptrace
def test_attach_again_once_the_limit_is_raised(spawn):
    """A failed attach leaves nothing behind: the same process attaches
    once its limit is raised."""
    t = spawn([PRELIVE, "1000", "64"])
    t.expect("ready")
    size = vm_size(t.pid)
    set_as_limit(t.pid, size + 12 * MIB)
    first = attach_outcome(t.pid)
    set_as_limit(t.pid, size + 256 * MIB)
    assert attach_outcome(t.pid) == "ok", first
    still_well(t)


def pids_cgroup_dir():
    """A new pids cgroup (v2 if its pids controller is on, else v1), or
    the reason there is none."""
    if os.geteuid() != 0:
        return None, "creating a cgroup needs root"
    for parent, ctl in (("/sys/fs/cgroup", "cgroup.subtree_control"),
                        ("/sys/fs/cgroup/unified", "cgroup.subtree_control"),
                        ("/sys/fs/cgroup/pids", None)):
        try:
            if ctl and "pids" not in open(os.path.join(parent, ctl)).read().split():
                continue
            path = os.path.join(parent, f"mwrap-test-{os.getpid()}")
            os.mkdir(path)
        except OSError:
            continue
        if os.path.exists(os.path.join(path, "pids.max")):
            return path, None
        os.rmdir(path)
    return None, "no writable cgroup with the pids controller (v2 or v1)"


@pytest.fixture
def pids_cgroup():
    path, why = pids_cgroup_dir()
    if not path:
        pytest.skip(why)
    yield path
    # the test kills its target before this teardown; its exit may lag
    for _ in range(100):
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.05)
    assert not os.path.exists(path), f"cgroup {path} left behind"


def set_pids(cg, what, value):
    with open(os.path.join(cg, what), "w") as f:
        f.write(str(value))


@needs_ptrace
@pytest.mark.parametrize("n", range(REPEAT))
def test_attach_in_a_pids_cgroup_at_its_limit(spawn, pids_cgroup, n):
    """The target's pids cgroup has no room for our helper: a clean
    failure.  Room for the helper only: before the fix liburcu's resize
    worker could not start and the target died of SIGABRT; now the
    attach needs no other thread."""
    t = spawn([PRELIVE, "1000", "64"])
    t.expect("ready")
    try:
        set_pids(pids_cgroup, "cgroup.procs", t.pid)
        current = int(open(os.path.join(pids_cgroup, "pids.current")).read())
        set_pids(pids_cgroup, "pids.max", current)
        msg = attach_outcome(t.pid)
        assert msg != "ok" and "Resource temporarily unavailable" in msg, msg
        set_pids(pids_cgroup, "pids.max", current + 1)
        assert attach_outcome(t.pid) == "ok"
        assert t.p.poll() is None
        set_pids(pids_cgroup, "pids.max", "max")
        still_well(t)
    finally:
        t.kill()


def limited(limit):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    return pre


def test_preload_under_ulimit_v(tmp):
    """`mwrap CMD` under `ulimit -v` from tight to ample: the process may
    find too little memory for itself, but it never aborts, and once
    the limit is ample it is traced.  Before the fix, a 14 MiB limit
    aborted it inside the constructor of libmwrap.so (SIGABRT from
    urcu_workqueue_create)."""
    outcomes = {}
    for mib in (6, 10, 14, 18, 20, 22, 24, 28, 32, 40, 64):
        dump = tmp / f"{mib}.dump"
        env = dict(os.environ, MWRAP=f"dump_path:{dump}")
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([MWRAP, PRELIVE, "1000", "64"], env=env,
                           input="alloc 100 64\nchurn 1000\nfree 50\n",
                           capture_output=True, text=True, timeout=60,
                           preexec_fn=limited(mib * MIB))
        assert p.returncode >= 0, (mib, p.returncode, p.stderr)
        assert "Unrecoverable error" not in p.stderr, (mib, p.stderr)
        if p.returncode == 0:
            assert p.stdout.splitlines()[-1] == "bye OK", (mib, p.stdout)
        outcomes[mib] = (p.returncode, dump.exists())
    assert outcomes[64] == (0, True), outcomes
