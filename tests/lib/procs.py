# SPDX-License-Identifier: MIT
"""Bounded process runs, targets driven line by line, and what /proc
says of a process."""
import os
import queue
import re
import shutil
import subprocess
import threading
import time

TIMEOUT = 60

# Every wait of these helpers is scaled(): a timeout given to them is
# what the host needs, and the arm64 VM's job (tests/arm64/job.sh) sets
# MWRAP_TEST_SLOW to the factor TCG runs slower (20-40x).  A test's own
# waits (its deadlines, sleeps, direct subprocess calls) call scaled().
TEST_SLOW = float(os.environ.get("MWRAP_TEST_SLOW", "1"))


def scaled(seconds):
    return seconds * TEST_SLOW


def clean_env(env=None):
    """The environment with ENV added, and no MWRAP or LD_PRELOAD of the
    test run's own."""
    full_env = dict(os.environ)
    full_env.pop("MWRAP", None)
    full_env.pop("LD_PRELOAD", None)
    full_env.update(env or {})
    return full_env


def run(cmd, env=None, timeout=TIMEOUT, **kw):
    """Runs cmd to completion (killed after scaled(timeout)), capturing
    output."""
    return subprocess.run(cmd, env=clean_env(env), timeout=scaled(timeout),
                          capture_output=True, text=True, **kw)


class Proc:
    """A target process driven line by line on stdin/stdout; every wait
    is bounded."""

    def __init__(self, argv, env=None, cwd=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  bufsize=1, env=clean_env(env), cwd=cwd)
        self.pid = self.p.pid
        self.lines = queue.Queue()
        self.seen = []

        def pump():
            for line in self.p.stdout:
                self.lines.put(line.rstrip("\n"))
            self.lines.put(None)
        threading.Thread(target=pump, daemon=True).start()

    def expect(self, prefix, timeout=30):
        deadline = time.monotonic() + scaled(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line starting with {prefix!r}; "
                                     f"saw {self.seen[-5:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"process exited ({self.p.wait()}) before {prefix!r}; "
                    f"saw {self.seen[-5:]}; stderr: {self.p.stderr.read()}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def finish(self, timeout=30):
        """Closes stdin and waits: (returncode, rest of stdout, stderr)."""
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.p.wait(timeout=scaled(timeout))
        rest = []
        while True:
            line = self.lines.get(timeout=scaled(timeout))
            if line is None:
                break
            rest.append(line)
        return rc, rest, self.p.stderr.read()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=scaled(10))


def remove(path):
    """Removes a file, a symlink or a directory tree; quiet if gone."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def family(pid):
    """pid and its descendants (workers, forked children)."""
    found = [pid]
    for p in found:
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    found += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def stop_all(procs):
    """Kills the Procs still running and removes what an attach left on
    the host for them and their children (a --detach leaves its final
    dump in the runtime directory, for its user)."""
    for proc in procs:
        left = [f for pid in family(proc.pid) for f in our_files(pid)]
        proc.kill()
        for path in left:
            remove(path)


def started_at(pid):
    """When process PID started (seconds since the epoch, to the clock
    tick), or None when it is gone."""
    try:
        with open("/proc/stat") as f:
            boot = next(int(l.split()[1]) for l in f if l.startswith("btime "))
        return boot + int(proc_stat(pid)[19]) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def our_files(pid):
    """What an attach left on the host for pid: its runtime directories
    and a library copy under /tmp, to remove once it is gone.  Not those
    of an earlier process that had its pid (pids wrap at 32768 here, and
    a runtime directory outlives a process that exits while attached)."""
    since = started_at(pid)

    def since_start(path):
        try:
            return since is None or os.stat(path).st_mtime >= since - 1
        except FileNotFoundError:
            return False
    found = [f"/tmp/{n}" for n in os.listdir("/tmp")
             if n.startswith(f"mwrap.{pid}.") and since_start(f"/tmp/{n}")]
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                m = re.search(r" (/tmp/mwrap-lib\.[A-Za-z0-9]+)/", line)
                if m and m.group(1) not in found and os.path.exists(
                        f"/proc/{pid}/root/{m.group(1)}") and \
                        os.path.samefile(f"/proc/{pid}/root/tmp", "/tmp"):
                    found.append(m.group(1))
    except OSError:
        pass
    return found


def proc_stat(pid):
    """/proc/PID/stat's fields after comm (the state first, ppid second,
    flags seventh): comm ends at the last ')', whatever bytes it holds."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def tracer_of(pid):
    """The pid tracing PID (TracerPid in its status), 0 for none."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def untraced_within(pid, seconds):
    """Whether PID has no tracer within SECONDS (scaled())."""
    deadline = time.monotonic() + scaled(seconds)
    while tracer_of(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return tracer_of(pid) == 0
