# SPDX-License-Identifier: MIT
"""Debian's Puma serving a Rack app of tests/rails on a free local port,
and why that cannot run here (make test-rails sets MWRAP_TEST_RAILS=1
after scripts/install-deps rails)."""
import contextlib
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request


def puma_missing():
    """Why Puma cannot run here, or None."""
    if os.environ.get("MWRAP_TEST_RAILS") != "1":
        return "Puma runs with make test-rails"
    if shutil.which("puma") is None:
        return "puma is not installed (scripts/install-deps rails)"
    return None


def line_of(path, text):
    """The number of PATH's first line containing TEXT."""
    with open(path) as f:
        return next(i for i, l in enumerate(f, 1) if text in l)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workers_of(master):
    with open(f"/proc/{master}/task/{master}/children") as f:
        return sorted(int(p) for p in f.read().split())


@contextlib.contextmanager
def puma_serving(app, workers=0, threads=4, boot=120):
    """Puma serving APP's config.ru on a free port of 127.0.0.1 in its own
    session: in single mode (WORKERS 0) or a cluster of WORKERS, THREADS
    threads each.  Waits (BOOT seconds at most) until it listens (and
    every worker booted) and APP answers GET /health: (pid, port).  Puma's
    session is ended afterwards (TERM, then KILL after 30 s)."""
    port = free_port()
    argv = ["puma", "-t", f"{threads}:{threads}", "-b", f"tcp://127.0.0.1:{port}"]
    if workers:
        argv += ["-w", str(workers)]
    p = subprocess.Popen(argv + ["config.ru"], cwd=app, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = queue.Queue()

    def drain():   # Puma's output to its end, so that Puma never blocks on it
        for line in p.stdout:
            lines.put(line)
        lines.put("")
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    seen = []
    try:
        deadline = time.monotonic() + boot
        booted = listening = 0
        while booted < workers or not listening:
            try:
                line = lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"puma not booted in {boot} s") from None
            assert line, "puma exited:\n" + "".join(seen)
            seen.append(line)
            booted += "booted in" in line
            listening += "Use Ctrl-C to stop" in line
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30).read()
        yield p.pid, port
    finally:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
        reader.join(timeout=30)
