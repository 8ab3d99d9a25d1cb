# SPDX-License-Identifier: MIT
"""Live attach: scripts/mwrap-attach + inject/mwrap-inject + libmwrap.so
on real Ruby and C processes started without any tracer."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import (ATTACH, INJECT, LEAK_RB, LIB, LINE_SLACK, ROOT, TARGETS, attach, during_window,
                      parse_dump, parse_json_dump, private_tmp, ptrace_allowed, run,
                      proc_stat, runtime_dir, skip_unless_gdb_works, start_leak, start_ready)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=f"ptrace not permitted: {ptrace_allowed()}")

def dump_json(pid):
    p = attach(["-p", str(pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    header, sites = parse_json_dump(p.stdout)
    return header, sites


def keep_attached(pid, extra=()):
    p = attach(["-p", str(pid), "--keep", *extra])
    assert p.returncode == 0, p.stderr
    return p


def detach(pid):
    p = attach(["-p", str(pid), "--detach"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok detach")


def test_attach_names_the_leaking_line_with_its_bytes(spawn):
    t, line, _ = start_leak(spawn)
    keep_attached(t.pid)
    t.send("leak 2000 10000")
    t.expect("leaked")
    _, sites = dump_json(t.pid)
    site = sites[f"{LEAK_RB}:{line}"]
    # 2000 strings of 10,000 bytes (heap buffer = size incl. NUL)
    assert site["live_count"] >= 2000
    assert abs(site["live_bytes"] - 20_000_000) <= 2_000_000
    detach(t.pid)
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 19998000"]


@pytest.mark.fast
def test_window_report_ranks_the_leak_first(spawn, tmp):
    t, line, _ = start_leak(spawn)
    import threading
    done = threading.Event()

    def feed():
        while not done.is_set():
            t.send("leak 50 20000")
            t.send("churn 200")
            time.sleep(0.05)
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    out = tmp / "report.json"
    p = attach(["-p", str(t.pid), "-d", "2", "--format=json", "-o", str(out)])
    done.set()
    feeder.join(timeout=5)
    assert p.returncode == 0, p.stderr
    header, sites = parse_json_dump(out.read_text())
    assert header["pid"] == t.pid and header["rss_bytes"] > 0
    first = next(iter(json.loads(l) for l in out.read_text().splitlines()[1:]))
    assert first["location"] == f"{LEAK_RB}:{line}"
    assert first["live_bytes"] >= 1_000_000
    # text format of the same thing
    p = attach(["-p", str(t.pid), "-d", "0.5"])
    assert p.returncode == 0, p.stderr
    assert re.search(r"ranked by (held|live) bytes", p.stdout)
    rc, _, _ = t.finish()
    assert rc == 0


def test_sigurg_and_control_file_dumps_while_attached(spawn):
    t, line, _ = start_leak(spawn)
    keep_attached(t.pid)
    t.send("leak 100 5000")
    t.expect("leaked")
    d, _ = runtime_dir(t.pid)
    dump = f"{d}/dump"
    before = os.path.getsize(dump) if os.path.exists(dump) else 0
    os.kill(t.pid, signal.SIGURG)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if os.path.exists(dump) and os.path.getsize(dump) > before:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    sites = parse_dump(open(dump).read()[before:])
    total, calls = sites[f"{LEAK_RB}:{line}"]
    assert calls >= 100 and total >= 100 * 5000
    # the control file, written by hand
    ctl, out = f"{d}/ctl", f"{d}/out"
    size = os.path.getsize(out)
    with open(ctl, "a") as f:
        f.write("stats\nfrobnicate\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and open(out).read()[size:].count("\n") < 2:
        time.sleep(0.05)
    answers = open(out).read()[size:].splitlines()
    assert answers[0].startswith("ok stats") and "live_bytes=" in answers[0]
    assert answers[1] == "error: unknown command: frobnicate"
    st = os.stat(ctl)
    assert st.st_mode & 0o777 == 0o600
    detach(t.pid)
    rc, _, _ = t.finish()
    assert rc == 0


def test_attach_twice_refused_and_reattach_after_detach(spawn):
    t, line, _ = start_leak(spawn)
    keep_attached(t.pid)
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 13 and "already attached" in p.stderr
    for i in range(3):
        detach(t.pid)
        p = attach(["-p", str(t.pid), "--stats"])
        assert p.returncode == 12
        keep_attached(t.pid)
        t.send("leak 10 3000")
        t.expect("leaked")
        _, sites = dump_json(t.pid)
        # each attach starts a new window: 10 strings, plus the KEEP
        # array growing on the same line
        assert 10 <= sites[f"{LEAK_RB}:{line}"]["allocations"] <= 14 + LINE_SLACK
    detach(t.pid)
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == [f"bye {3 * 10 * 2999}"]


def test_target_blocked_in_read_gets_its_data(spawn):
    t, _, _ = start_leak(spawn)       # blocked in read() on stdin
    keep_attached(t.pid)
    detach(t.pid)
    t.send("leak 1 100")
    assert t.expect("leaked") == "leaked 1"
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 99"]


def test_sleep_is_not_cut_short(spawn):
    t, _, _ = start_leak(spawn)
    t.send("sleep 2")
    time.sleep(0.5)
    keep_attached(t.pid)
    detach(t.pid)
    slept = float(t.expect("slept").split()[1])
    assert 1.95 <= slept < 3.0
    assert t.finish()[0] == 0


def test_tight_vector_loop_checksum_unchanged(spawn):
    # the target compares every block of vector arithmetic with the first
    t = spawn([os.path.join(TARGETS, "vecloop")])
    t.expect("ready")
    for _ in range(3):
        keep_attached(t.pid)
        detach(t.pid)
    rc, rest, _ = t.finish()
    assert rest == ["ok blocks"] and rc == 0


@pytest.mark.parametrize("threads", [1, 4])
def test_malloc_storm_attached_repeatedly(spawn, threads):
    t = spawn([os.path.join(TARGETS, "storm"), str(threads), "600"])
    t.expect("ready")
    for _ in range(20):
        keep_attached(t.pid)
        p = attach(["-p", str(t.pid), "--stats"])
        assert p.returncode == 0 and "allocations=" in p.stdout
        detach(t.pid)
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"done {threads} threads ok"], (rc, err)


def test_fork_while_attached_and_threads_allocate(spawn):
    """The fork handlers hold our locks and liburcu's across fork: the
    parent keeps tracing, every child detaches itself and exits."""
    t = spawn([os.path.join(TARGETS, "forker"), "60", "wait"])
    t.expect("ready")
    keep_attached(t.pid)
    t.send("go")
    assert t.expect("forked", timeout=120) == "forked 60"
    p = attach(["-p", str(t.pid), "--stats"])
    assert p.returncode == 0 and "allocations=" in p.stdout
    detach(t.pid)
    rc, _, err = t.finish()
    assert rc == 0, err


def test_native_sites_in_a_c_target(spawn):
    t = spawn([os.path.join(TARGETS, "storm"), "2", "600"])
    t.expect("ready")
    keep_attached(t.pid)
    time.sleep(0.3)
    header, sites = dump_json(t.pid)
    assert header["age_unit"] == "ns"
    mine = [s for loc, s in sites.items() if "(storm+0x" in loc]
    assert mine and mine[0]["allocations"] > 100
    detach(t.pid)
    os.kill(t.pid, signal.SIGKILL)


def test_require_zlib_after_attach_is_tracked(spawn):
    t, _, zline = start_leak(spawn)
    keep_attached(t.pid)
    t.send("zlib")
    t.expect("zlib ok")
    _, sites = dump_json(t.pid)
    site = sites[f"{LEAK_RB}:{zline}"]
    assert site["live_bytes"] >= 256 * 1024      # deflate's window + hash
    detach(t.pid)
    assert t.finish()[0] == 0


def test_forked_child_detaches_itself(spawn):
    t, line, _ = start_leak(spawn)
    keep_attached(t.pid)
    out = f"{runtime_dir(t.pid)[0]}/out"
    size = os.path.getsize(out)
    t.send("fork")
    assert t.expect("child ok") == "child ok 1000"
    assert t.expect("forked child") == "forked child exit=0"
    # the child never answered into the parent's files
    assert open(out).read()[size:] == ""
    # strings of 4,000 bytes: Ruby 4.1's heap slots reach 1,024 bytes, and
    # a string of 1,000 (999 + NUL) is embedded in one, never malloc'd
    # (4 allocations on the line, none a string)
    t.send("leak 5 4000")
    t.expect("leaked")
    _, sites = dump_json(t.pid)
    assert 5 <= sites[f"{LEAK_RB}:{line}"]["allocations"] <= 8 + LINE_SLACK
    detach(t.pid)
    assert t.finish()[0] == 0


def test_gdb_backend(spawn):
    skip_unless_gdb_works()
    t, line, _ = start_leak(spawn)
    p = attach(["-p", str(t.pid), "--keep", "--backend=gdb"], timeout=120)
    assert p.returncode == 0, p.stderr
    t.send("leak 100 4000")
    t.expect("leaked")
    _, sites = dump_json(t.pid)
    assert 100 <= sites[f"{LEAK_RB}:{line}"]["allocations"] <= 105 + LINE_SLACK
    detach(t.pid)
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 399900"]


@pytest.mark.parametrize("args, code, text", [
    (["-p", "abc"], 2, "bad pid"),
    (["-p", "0"], 2, "bad pid"),
    (["-p", "-5"], 2, None),
    (["-p", "999999999"], 2, "bad pid"),
    (["-p", "4194000"], 3, "no such process"),
    (["-p", "1", "-d", "x"], 2, "-d wants"),
    (["-p", "1", "-d", "0"], 2, "-d wants"),
    (["-p", "1", "--bogus"], 2, "invalid option"),
    (["-p", "1", "-o", "/nonexistent/dir/r.txt"], 2, "no such directory"),
    (["-p", "1", "--format=xml"], 2, "--format"),
    ([], 2, "missing -p"),
    # the missing pid is the error, not the option's value after it
    (["-p", "-d", "30"], 2, "missing pid: -p is followed by -d"),
    (["--children-of", "-v"], 2, "missing pid: --children-of is followed by -v"),
])
def test_bad_input(args, code, text):
    p = attach(args)
    assert p.returncode == code, (p.returncode, p.stderr)
    if text:
        assert text in p.stderr
    assert p.stderr.startswith("mwrap-attach: ")


def test_stopped_process_refused_and_left_stopped(spawn):
    t, _, _ = start_leak(spawn)
    os.kill(t.pid, signal.SIGSTOP)
    time.sleep(0.2)
    try:
        p = attach(["-p", str(t.pid), "--keep"])
        assert p.returncode == 6 and "stopped" in p.stderr
        assert proc_stat(t.pid)[0] == "T"
    finally:
        os.kill(t.pid, signal.SIGCONT)
    assert t.finish()[0] == 0


def test_not_attached_commands():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for flag in ("--stats", "--dump", "--detach"):
            p = attach(["-p", str(sleeper.pid), flag])
            assert p.returncode == 12 and "not attached" in p.stderr
    finally:
        sleeper.kill()
        sleeper.wait()


def test_injector_usage_and_refusals():
    p = run([INJECT])
    assert p.returncode == 2 and "usage:" in p.stderr
    p = run([INJECT, "-p", "4194000", LIB, "mw_attach"])
    assert p.returncode == 3


def test_target_in_its_own_mount_and_pid_namespace(spawn, tmp):
    """A container-like target: its own pid and mount namespaces, a
    private /tmp, and our build/lib/ directory hidden, so the library (and
    liburcu beside it) must be copied into the target's /tmp and the
    control files live in its namespace."""
    private = private_tmp(tmp, ("--mount", "--pid", "--fork"),
                          "private-tmp")
    # build/lib/ first: the repository itself may live under /tmp
    script = (f"mount -t tmpfs none {ROOT}/build/lib && "
              f"mount --bind {private} /tmp && exec ruby /tmp/leak.rb")
    t = spawn(["unshare", "--mount", "--pid", "--fork",
               "--propagation", "private", "sh", "-c", script])
    ready = t.expect("ready")
    assert ready.split()[1] == "1"          # pid 1 in its namespace
    line = int(ready.split()[2].split("=")[1])
    children = open(f"/proc/{t.pid}/task/{t.pid}/children").read().split()
    pid = int(children[0])
    assert not os.path.exists(f"/proc/{pid}/root{LIB}")
    p = attach(["-p", str(pid), "--keep", "-v"])
    assert p.returncode == 0, p.stderr
    assert "copied the library" in p.stderr
    d, name = runtime_dir(pid)
    assert name.startswith("/tmp/mwrap.1.")      # named in its namespace
    assert os.path.exists(f"{d}/ctl")
    assert (private / os.path.basename(name) / "ctl").exists()
    t.send("leak 100 8000")
    t.expect("leaked")
    _, sites = dump_json(pid)
    assert 100 <= sites[f"/tmp/leak.rb:{line}"]["allocations"] <= 105 + LINE_SLACK
    detach(pid)
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 799900"]


def test_sampled_attach_ranks_the_leak_and_says_estimate(spawn):
    t, line, _ = start_leak(spawn)
    keep_attached(t.pid, ["--sample=8192"])
    # 12 MB leaked (~1,500 samples) against at most ~2.5 MB of churn
    # not yet collected: the ranking is not left to chance
    t.send("leak 3000 4000")
    t.send("churn 5000")
    t.expect("leaked")
    t.expect("churned")
    p = attach(["-p", str(t.pid), "--dump"])
    assert p.returncode == 0, p.stderr
    assert "figures are estimates" in p.stdout
    table = p.stdout.split("location\n", 1)[1]
    assert table.splitlines()[0].endswith(f"{LEAK_RB}:{line}")
    detach(t.pid)
    assert t.finish()[0] == 0


def test_a_process_named_like_a_zombie_is_attached(spawn):
    """comm "a) Z x" (written to /proc/self/comm, as prctl PR_SET_NAME
    sets it: the kernel takes any bytes) is not read as the state Z:
    /proc/PID/stat's comm ends at its last ')'.  It is attached, reported
    and detached."""
    name = "a) Z x"
    code = f"File.write('/proc/self/comm', %q{{{name}}}); load {LEAK_RB!r}"
    t, f = start_ready(spawn, ["ruby", "-e", code])
    with open(f"/proc/{t.pid}/comm") as c:
        assert c.read().strip() == name
    line = int(f["leak_line"])

    def leak():
        t.send("leak 50 20000")
        t.expect("leaked 50")
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2"], t.pid, leak)
    assert rc == 0, err
    assert f"{LEAK_RB}:{line}" in out
    assert "detached" in err
    rc, _, _ = t.finish()
    assert rc == 0
