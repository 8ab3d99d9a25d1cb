# SPDX-License-Identifier: MIT
"""mwrap-attach and mwrap-inject runs, and what an attach leaves in its
target to see it by."""
import os
import re
import subprocess
import threading
import time

from lib.paths import ATTACH, INJECT, LIB
from lib.procs import run, scaled

RUNTIME_DIR = re.compile(r"/mwrap\.\d+\.[A-Za-z0-9]{6}$")


def runtime_dir(pid, timeout=10):
    """The attach's private runtime directory in process pid, found as
    the helper keeps it open: (/proc/PID/fd/N, which reaches it without
    resolving a path, and its name as the target sees it), or (None,
    None) if none shows within scaled(timeout)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        try:
            fds = sorted(os.listdir(f"/proc/{pid}/fd"), key=int, reverse=True)
        except OSError:
            fds = []
        for n in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{n}")
            except OSError:
                continue
            if RUNTIME_DIR.search(link):
                return f"/proc/{pid}/fd/{n}", link
        if time.monotonic() >= deadline:
            return None, None
        time.sleep(0.02)


def is_attached(pid):
    """Whether pid has a helper serving a control channel (today's
    runtime directory, or the /tmp/mwrap.PID.ctl of earlier versions)."""
    ctl = f"/proc/{pid}/root/tmp/mwrap.{pid}.ctl"
    return (runtime_dir(pid, 0)[0] is not None or
            (os.path.isfile(ctl) and not os.path.islink(ctl)))


def helper_answered(pid):
    """Whether pid's helper has answered its attach ("ok attached"):
    tracking is on from then."""
    d, _ = runtime_dir(pid, 0)
    out = f"{d}/out" if d else f"/proc/{pid}/root/tmp/mwrap.{pid}.out"
    try:
        with open(out, "rb") as f:
            return b"ok attached" in f.read()
    except OSError:
        return False


def wait_injector(front, timeout, or_else=lambda: False):
    """Waits until FRONT (an mwrap-attach) runs mwrap-inject, or OR_ELSE()
    holds: True, or False after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if or_else():
            return True
        try:
            with open(f"/proc/{front}/task/{front}/children") as f:
                kids = f.read().split()
            for k in kids:
                with open(f"/proc/{k}/comm") as f:
                    if f.read().strip() == "mwrap-inject":
                        return True
        except OSError:
            pass
        time.sleep(0.001)
    return False


def attach(args, timeout=60):
    return run([ATTACH] + args, timeout=timeout)


def during_window(argv, pid, action, timeout=90):
    """Runs ARGV (an mwrap-attach window on PID); once PID's helper has
    answered (the window is open: tracking is on), calls ACTION(); then
    waits for it: (returncode, stdout, stderr).  Never leaves it running."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + scaled(30)
        while not helper_answered(pid) and p.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        action()
        out, err = p.communicate(timeout=scaled(timeout))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


def attach_during(pids, args, act, interrupt=False):
    """mwrap-attach -p PIDS ARGS, with ACT(its Popen) called once every
    pid's helper answers (or 30 s), then Ctrl-C when INTERRUPT (ends the
    window; sent once the front end's window has begun, as its first
    progress line says: an answer it has not read yet is still the
    attach, which a Ctrl-C undoes): (exit code, stdout, stderr)."""
    proc = subprocess.Popen([ATTACH, "-p", ",".join(map(str, pids))] + args,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said, out = [], []
    readers = [threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True),
               threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)]
    for r in readers:
        r.start()
    try:
        deadline = time.monotonic() + scaled(30)
        while not all(helper_answered(p) for p in pids) and \
                proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        act(proc)
        if interrupt:
            while not any(l.startswith("[mwrap-attach]") for l in said) and \
                    proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.send_signal(2)
        proc.wait(timeout=scaled(90))
        for r in readers:
            r.join(timeout=scaled(10))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=scaled(10))
    return proc.returncode, "".join(out), "".join(said)


def inject(pid, fn="mw_attach", arg="", lib=LIB, backend=None, timeout=20,
           verbose=False, env=None):
    """mwrap-inject -p PID calling FN(ARG) in LIB, run to its end: the
    CompletedProcess.  BACKEND: its --backend (None: its default);
    TIMEOUT: its --timeout, scaled(), the run killed 60 s (scaled) after
    that; VERBOSE: -v; ENV: added to the environment as run() does."""
    argv = [INJECT, "-p", str(pid), "--timeout", str(int(scaled(timeout)))]
    if backend:
        argv.append(f"--backend={backend}")
    if verbose:
        argv.append("-v")
    return run(argv + [lib, fn, arg], env=env, timeout=timeout + 60)


def inject_result(pid, fn, arg="", **kw):
    """inject()'s call, which must succeed: its output ("result=N")."""
    p = inject(pid, fn, arg, **kw)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p.stdout.strip()
