# SPDX-License-Identifier: MIT
"""--every SECONDS -d WINDOW --serve ADDR:PORT (issue 45 item 1): a window
every SECONDS on a live Ruby target, its profile served at
/debug/pprof/heap as Go's net/http/pprof serves it, read by the real
`go tool pprof URL`; between windows the target is detached (its
libruby's malloc-family GOT slots point into libc again, no helper thread,
no runtime directory, no mapping added), and it answers as before;
SIGTERM and SIGINT end the run at once, detached, exit 0; a target that
exits ends it with 16; bad options are usage errors (2) before anything
is touched."""
import functools
import http.client
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import (ATTACH, LEAK_RB, is_attached, private_tree, ptrace_allowed, run, runtime_dir,
                      scaled, start_leak)

needs_ptrace = pytest.mark.skipif(ptrace_allowed() is not None,
                                  reason=f"ptrace not permitted: {ptrace_allowed()}")
GO = shutil.which("go")
needs_go = pytest.mark.skipif(
    GO is None, reason="go not installed (scripts/install-deps installs golang-go)")

# a window of WINDOW seconds every EVERY: short, so that a test sees a few
EVERY, WINDOW = "3", "1.5"
# what the feeder keeps per command (leak.rb: N strings of SIZE bytes)
LEAK_N, LEAK_SIZE = 20, 4096
SLOTS = ("malloc", "calloc", "realloc", "free")


class EveryRun:
    """mwrap-attach -p PID ARGS..., its stderr read line by line as it
    comes; never left running (stop(), or killed by close())."""

    def __init__(self, pid, args, env=None, attach=ATTACH):
        full_env = dict(os.environ)
        for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
            full_env.pop(k, None)
        full_env.update(env or {})
        self.p = subprocess.Popen([attach, "-p", str(pid), *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=full_env)
        self.lines = queue.Queue()
        self.err = []
        self.out = []

        def pump(stream, keep, q):
            for line in stream:
                keep.append(line.rstrip("\n"))
                if q:
                    q.put(line.rstrip("\n"))
            if q:
                q.put(None)
        threading.Thread(target=pump, args=(self.p.stderr, self.err, self.lines), daemon=True).start()
        threading.Thread(target=pump, args=(self.p.stdout, self.out, None), daemon=True).start()

    def expect(self, pattern, timeout=30):
        """The next stderr line matching PATTERN (a regex), within
        scaled(TIMEOUT) seconds."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r}: {self.err[-8:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"mwrap-attach exited ({self.p.wait()}) before {pattern!r}: "
                                     f"{self.err[-8:]}")
            if re.search(pattern, line):
                return line

    def url(self):
        return self.expect(r"serving the latest window's profile at ").rsplit(" ", 1)[1]

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Sends SIG and waits: (exit code, seconds it took)."""
        t0 = time.monotonic()
        self.p.send_signal(sig)
        rc = self.p.wait(timeout=scaled(timeout))
        return rc, time.monotonic() - t0

    def wait(self, timeout=30):
        return self.p.wait(timeout=scaled(timeout))

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=scaled(10))


@pytest.fixture
def every():
    """Starts EveryRuns; kills any still running at teardown."""
    runs = []

    def start(pid, args, **kw):
        r = EveryRun(pid, args, **kw)
        runs.append(r)
        return r
    yield start
    for r in runs:
        r.close()


class Feeder:
    """Sends leak.rb a "leak N SIZE" every PERIOD seconds until stopped,
    counting them: the target's expected answers and final checksum."""

    def __init__(self, target, period=0.1):
        self.target, self.sent = target, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(period,), daemon=True)
        self.thread.start()

    def run(self, period):
        while not self.done.wait(period):
            try:
                self.target.send(f"leak {LEAK_N} {LEAK_SIZE}")
            except (OSError, ValueError):
                return   # the target is gone (a failed test's teardown)
            self.sent += 1

    def stop(self):
        self.done.set()
        self.thread.join(timeout=scaled(10))
        assert not self.thread.is_alive()


def finish_unchanged(target, feeder):
    """The target answered every command, in order, and its checksum is
    the bytes it was asked to keep: its behaviour did not change."""
    feeder.stop()
    target.send(f"leak {LEAK_N} {LEAK_SIZE}")   # after the run: it still works
    rc, rest, err = target.finish()
    answers = target.seen + rest
    assert rc == 0, err
    assert answers.count(f"leaked {LEAK_N}") == feeder.sent + 1, answers[-5:]
    assert answers[-1] == f"bye {(feeder.sent + 1) * LEAK_N * (LEAK_SIZE - 1)}", answers[-3:]
    assert not [a for a in answers if not a.startswith(("ready", "leaked", "bye"))]


def mappings(pid):
    """[(start, end, file offset, path)] of /proc/PID/maps."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end, int(parts[2], 16), parts[5].strip() if len(parts) > 5 else ""))
    return out


@functools.lru_cache(maxsize=None)
def got_offsets(path):
    """{symbol: GOT slot offset} of PATH's malloc-family relocations
    (readelf -r: JUMP_SLOT or GLOB_DAT, any architecture)."""
    p = run(["readelf", "-rW", path])
    assert p.returncode == 0, p.stderr
    found = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^([0-9a-f]+)\s+\S+\s+R_\w+_(?:JUMP_SLOT|GLOB_DAT)\s+\S+\s+(\w+)@", line)
        if m and m.group(2) in SLOTS:
            found.setdefault(m.group(2), int(m.group(1), 16))
    return found


def slot_owners(pid):
    """{symbol: the file its GOT slot in the target's libruby (or its
    executable, for a Ruby linked statically with libruby) points into},
    read from /proc/PID/mem: libc's between windows, libmwrap's during
    one."""
    maps = mappings(pid)
    ruby = next((p for _, _, _, p in maps if "/libruby" in p), os.readlink(f"/proc/{pid}/exe"))
    base = min(s for s, _, off, p in maps if p == ruby and off == 0)
    owners = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for name, off in got_offsets(ruby).items():
            mem.seek(base + off)
            value = int.from_bytes(mem.read(8), "little")
            owners[name] = next((os.path.basename(p) for s, e, _, p in maps if s <= value < e), hex(value))
    assert set(owners) >= {"malloc", "free"}, owners
    return owners


def detached_state(pid):
    """What /proc shows of an attach: its helper thread and runtime
    directory, whether a helper answers, the slots' owners, and the
    mapped files (anonymous memory is the target's to grow)."""
    return {"tasks": len(os.listdir(f"/proc/{pid}/task")), "runtime_dir": runtime_dir(pid, 0)[0],
            "attached": is_attached(pid), "slots": slot_owners(pid),
            "maps": sorted((p, e - s) for s, e, _, p in mappings(pid) if p.startswith("/"))}


def http_get(url, method="GET", path=None):
    """(status, headers dict, body) of one request to URL's server."""
    m = re.match(r"http://([^/:]+):(\d+)(/.*)", url)
    conn = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=scaled(10))
    try:
        conn.request(method, path or m.group(3))
        res = conn.getresponse()
        return res.status, dict(res.getheaders()), res.read()
    finally:
        conn.close()


def go_pprof(tmp, *args):
    """`go tool pprof ARGS`: (exit code, stdout, stderr)."""
    p = run([GO, "tool", "pprof", *args], cwd=tmp, timeout=120,
            env={"HOME": str(tmp), "PPROF_TMPDIR": str(tmp), "GOTOOLCHAIN": "local"})
    return p.returncode, p.stdout, p.stderr


def leak_row(row, line):
    """Whether a -top row names leak.rb's LINE (with its method's name
    where the profile has stacks)."""
    return re.fullmatch(rf"{re.escape(LEAK_RB)}:{line}( in \S+)?", row) is not None


def top_rows(text):
    """The function names of `pprof -top`'s rows, heaviest first."""
    return re.findall(r"^\s*-?[\d.]+\w*B?\s+[\d.]+%\s+[\d.]+%\s+-?[\d.]+\w*B?\s+[\d.]+%\s+(.+?)\s*$",
                      text, re.M)


@needs_ptrace
@needs_go
def test_go_tool_pprof_names_the_leak_line_from_the_served_url(spawn, every, tmp):
    t, line, _ = start_leak(spawn)
    feeder = Feeder(t)
    r = every(t.pid, ["--every", EVERY, "-d", WINDOW, "--serve", "127.0.0.1:0",
                      "--label", "service=shop", "--label", "pod=web-1"])
    url = r.url()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/debug/pprof/heap", url), url
    r.expect(r"^mwrap-attach: window 1: ")
    status, headers, body = http_get(url)
    assert status == 200
    assert headers["Content-Type"] == "application/octet-stream"
    assert body[:2] == b"\x1f\x8b"                       # gzip'd profile.proto
    assert http_get(url, path="/debug/pprof/allocs")[2] == body   # the same profile
    assert http_get(url, method="HEAD")[:2] == (200, headers)
    assert http_get(url, path="/debug/pprof/goroutine")[:2][0] == 404
    assert http_get(url, path="/metrics")[0] == 404
    assert http_get(url, method="POST")[0] == 405
    # ?seconds= is ignored: the latest window at once
    assert http_get(url, path="/debug/pprof/heap?seconds=30")[2] == body

    rc, out, err = go_pprof(tmp, "-top", url)
    assert rc == 0, err
    assert leak_row(top_rows(out)[0], line), out
    rc, out, err = go_pprof(tmp, "-top", "-sample_index=inuse_space", url)
    assert rc == 0 and leak_row(top_rows(out)[0], line), out
    rc, out, err = go_pprof(tmp, "-tags", url)
    assert rc == 0, err
    assert re.search(r"service: Total .*\n\s+\S+ \(\s*100%\): shop", out), out
    assert re.search(r"pod: Total .*\n\s+\S+ \(\s*100%\): web-1", out), out

    rc, took = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    assert not is_attached(t.pid)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=2).close()
    finish_unchanged(t, feeder)


@needs_ptrace
@needs_go
def test_before_the_first_window_ends_the_url_answers_503(spawn, every, tmp):
    """What net/http/pprof says of an error; the window is long, so that
    a slow `go tool pprof` still asks before it ends."""
    t, _, _ = start_leak(spawn)
    r = every(t.pid, ["--every", "120", "-d", "100", "--serve", "127.0.0.1:0"])
    url = r.url()
    r.expect(r"^mwrap-attach: attached to ")
    status, headers, body = http_get(url)
    assert status == 503, (status, body)
    assert headers["X-Go-Pprof"] == "1" and headers["Content-Type"].startswith("text/plain")
    assert body.startswith(b"no profile yet: the first window on process %d ends in about "
                           % t.pid), body
    assert int(headers["Retry-After"]) >= 1
    rc, _, err = go_pprof(tmp, "-top", url)
    assert rc != 0 and "503" in err and "no profile yet" in err, err
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0 and not is_attached(t.pid), r.err


@needs_ptrace
def test_detached_between_windows(spawn, every, tmp):
    """From /proc: during a window libruby's malloc-family GOT slots
    point into libmwrap; after each window's detach into libc again, no
    helper thread and no runtime directory are left, and the maps are
    the same from one gap to the next (the library the first window
    loaded stays mapped, as every detach leaves it: nothing points at it,
    and the next window reuses it).  The target's answers are unchanged.
    Our tree's copy: a rebuild meanwhile would change the maps."""
    attach, _ = private_tree(tmp)
    t, _, _ = start_leak(spawn)
    before = slot_owners(t.pid)
    assert before["malloc"].startswith("libc"), before
    tasks = len(os.listdir(f"/proc/{t.pid}/task"))
    feeder = Feeder(t)
    r = every(t.pid, ["--every", EVERY, "-d", WINDOW, "--serve", "127.0.0.1:0"], attach=attach)
    gaps = []
    for n in (1, 2, 3):
        r.expect(r"^mwrap-attach: attached to ")
        during = slot_owners(t.pid)
        assert all(o.startswith("libmwrap") for o in during.values()), during
        r.expect(r"^mwrap-attach: detached \(ok detach")
        time.sleep(0.3)   # the helper thread's last steps after its answer
        gaps.append(detached_state(t.pid))
        assert r.p.poll() is None
    for gap in gaps:
        assert gap["slots"] == before, gap["slots"]
        assert gap["tasks"] == tasks and gap["runtime_dir"] is None and not gap["attached"], gap
        assert gap["maps"] == gaps[0]["maps"]
    assert any("libmwrap" in p for p, _ in gaps[0]["maps"])
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    assert slot_owners(t.pid) == before
    finish_unchanged(t, feeder)


@needs_ptrace
def test_a_library_replaced_between_windows_is_loaded_anew(spawn, every, tmp):
    """A rebuild or an upgrade replaces libmwrap.so while --every runs:
    the next window loads a copy under a name of its own (by the old
    name, dlopen would find the deleted library) and goes on.  The tree
    is a copy of ours, so that ours is not replaced."""
    attach, lib = private_tree(tmp)
    t, _, _ = start_leak(spawn)
    r = every(t.pid, ["--every", EVERY, "-d", "1", "--serve", "127.0.0.1:0"], attach=attach)
    r.expect(r"^mwrap-attach: window 1: ")
    shutil.copy2(lib, tmp / "libmwrap.so.new")
    os.replace(tmp / "libmwrap.so.new", lib)
    r.expect(r"was deleted; loading a new copy")
    r.expect(r"^mwrap-attach: window 2: ")
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    assert not [line for line in r.err if "failed" in line], r.err
    loaded = [p for *_, p in mappings(t.pid) if p.endswith("/libmwrap.so")]
    assert any(re.search(r"/mwrap-lib\.\w+/libmwrap\.so$", p) for p in loaded), loaded


@needs_ptrace
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_in_a_window_ends_it_detached_at_once(spawn, every, sig):
    t, _, _ = start_leak(spawn)
    before = slot_owners(t.pid)
    r = every(t.pid, ["--every", "120", "-d", "100", "--serve", "127.0.0.1:0"])
    r.expect(r"^mwrap-attach: attached to ")
    rc, took = r.stop(sig)
    assert rc == 0, r.err
    assert took < scaled(5), took
    assert "mwrap-attach: stopping on a signal: window 1 cut short and detached" in r.err, r.err
    assert not is_attached(t.pid) and slot_owners(t.pid) == before
    t.send("leak 1 100")
    t.expect("leaked 1")


@needs_ptrace
def test_a_signal_between_windows_ends_it(spawn, every):
    t, _, _ = start_leak(spawn)
    r = every(t.pid, ["--every", "60", "-d", "0.5", "--serve", "127.0.0.1:0"])
    r.expect(r"^mwrap-attach: window 1: ")
    rc, took = r.stop(signal.SIGTERM)
    assert rc == 0 and took < scaled(5), (rc, took, r.err)
    assert r.err[-1] == "mwrap-attach: stopping on a signal: between windows, the process detached"


@needs_ptrace
def test_a_window_that_ends_late_skips_a_start(spawn, every):
    """-d 0.99 every second: the attach and the final dump take longer
    than the 10 ms left, so each window ends after the next start was
    due; that start is skipped, said, and the next window begins at the
    one after, a whole interval on."""
    t, _, _ = start_leak(spawn)
    r = every(t.pid, ["--every", "1", "-d", "0.99", "--serve", "127.0.0.1:0"])
    r.expect(r"^mwrap-attach: window 1 ended late: 1 start\(s\) skipped$")
    r.expect(r"^mwrap-attach: window 2: ")
    rc, _ = r.stop(signal.SIGTERM)
    assert rc == 0, r.err
    assert not is_attached(t.pid)


@needs_ptrace
def test_a_target_that_exits_ends_the_run_with_16(spawn, every):
    t, _, _ = start_leak(spawn)
    r = every(t.pid, ["--every", EVERY, "-d", "1", "--serve", "127.0.0.1:0"])
    r.expect(r"^mwrap-attach: window 1: ")
    rc, _, _ = t.finish()
    assert rc == 0
    assert r.wait(timeout=15) == 16, r.err
    assert re.search(rf"process {t.pid} exited (after|during|before) window", "\n".join(r.err)), r.err


@pytest.mark.fast
@pytest.mark.parametrize("args, text", [
    (["--every", "5"], "--every needs -d SECONDS"),
    (["--every", "5", "-d", "5", "--serve", ":0"], "-d 5 is not shorter than --every 5"),
    (["--every", "5", "-d", "9", "--serve", ":0"], "-d 9 is not shorter than --every 5"),
    (["--every", "0", "-d", "1", "--serve", ":0"], "--every wants a number of seconds > 0"),
    (["--every", "5", "-d", "1"], "--every needs --serve ADDR:PORT or --push URL"),
    (["-d", "1", "--serve", ":0"], "--serve: only with --every SECONDS"),
    (["--every", "5", "-d", "1", "--serve", "6060"], "--serve wants ADDR:PORT"),
    (["--every", "5", "-d", "1", "--serve", "localhost:70000"], "--serve wants ADDR:PORT"),
    (["--every", "5", "-d", "1", "--serve", "[::1:6060"], "--serve wants ADDR:PORT"),
    (["--every", "5", "-d", "1", "--serve", ":0", "--keep"], "--every does not take --keep"),
    (["--every", "5", "-d", "1", "--serve", ":0", "-o", "x.pb.gz"], "--every does not take -o"),
    (["--every", "5", "-d", "1", "--serve", ":0", "--format", "json"], "not with --format"),
    (["--every", "5", "-d", "1", "--serve", ":0", "--dump"], "not with --dump"),
])
def test_bad_options_are_usage_errors(args, text):
    p = run([ATTACH, "-p", str(os.getpid()), *args])
    assert p.returncode == 2, p.stderr
    assert text in p.stderr, p.stderr


@pytest.mark.fast
def test_every_takes_one_pid():
    for who in (["-p", f"{os.getpid()},{os.getppid()}"], ["--children-of", str(os.getppid())]):
        p = run([ATTACH, *who, "--every", "5", "-d", "1", "--serve", ":0"])
        assert p.returncode == 2, p.stderr
        assert "--every takes one pid" in p.stderr, p.stderr


@needs_ptrace
@pytest.mark.fast
def test_a_port_in_use_is_a_usage_error_before_the_target_is_touched(spawn):
    t = spawn(["sleep", "30"])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        p = run([ATTACH, "-p", str(t.pid), "--every", "5", "-d", "1", "--serve", f"127.0.0.1:{port}"])
    assert p.returncode == 2, p.stderr
    assert f"--serve 127.0.0.1:{port}: cannot listen: Address already in use" in p.stderr, p.stderr
    assert not any("libmwrap" in path for *_, path in mappings(t.pid))
