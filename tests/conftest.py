# SPDX-License-Identifier: MIT
"""Shared helpers: paths, bounded process runs, dump parsing."""
import functools
import html
import json
import os
import re
import shutil
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# where `make` leaves its products (the Makefile's LIBMWRAP, INJECTOR,
# RUBY_EXT)
LIB = os.path.join(ROOT, "build", "lib", "libmwrap.so")
# the Mwrap Ruby API: mwrap.rb in the tree, mwrap_ext.so built
RUBY_API_DIRS = [os.path.join(ROOT, "ruby-ext", "lib"), os.path.join(ROOT, "build", "ruby")]
RUBY_API_I = [arg for d in RUBY_API_DIRS for arg in ("-I", d)]   # ruby's options
RUBY_API_PATH = ":".join(RUBY_API_DIRS)                            # RUBYLIB
MWRAP = os.path.join(ROOT, "scripts", "mwrap")
TARGETS = os.path.join(ROOT, "build", "targets")
TIMEOUT = 60

# Every wait of these helpers is scaled(): a timeout given to them is
# what the host needs, and the arm64 VM's job (tests/arm64/job.sh) sets
# MWRAP_TEST_SLOW to the factor TCG runs slower (20-40x).  A test's own
# waits (its deadlines, sleeps, direct subprocess calls) call scaled().
TEST_SLOW = float(os.environ.get("MWRAP_TEST_SLOW", "1"))


def scaled(seconds):
    return seconds * TEST_SLOW


DUMP_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s(.+)$")


def run(cmd, env=None, timeout=TIMEOUT, **kw):
    """Runs cmd to completion (killed after scaled(timeout)), capturing
    output."""
    full_env = dict(os.environ)
    full_env.pop("MWRAP", None)
    full_env.pop("LD_PRELOAD", None)
    full_env.update(env or {})
    return subprocess.run(cmd, env=full_env, timeout=scaled(timeout),
                          capture_output=True, text=True, **kw)


def parse_dump(text):
    """mwrap's three-column dump -> {location: (total_bytes, calls)}.

    A location seen twice (dumps appended to one file) keeps the last.
    """
    sites = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = DUMP_LINE.match(line)
        if m:
            sites[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return sites


def parse_json_dump(text):
    """JSON Lines dump -> (header, {location: site dict}); scan and
    objects records are left out."""
    header, sites = None, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj["type"] == "header":
            header = obj
        elif obj["type"] == "site":
            sites[obj["location"]] = obj
    return header, sites


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


ATTACH = os.path.join(ROOT, "scripts", "mwrap-attach")
INJECT = os.path.join(ROOT, "build", "bin", "mwrap-inject")


class Proc:
    """A target process driven line by line on stdin/stdout; every wait
    is bounded."""

    def __init__(self, argv, env=None, cwd=None):
        import queue
        import threading
        full_env = dict(os.environ)
        full_env.pop("MWRAP", None)
        full_env.pop("LD_PRELOAD", None)
        full_env.update(env or {})
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  bufsize=1, env=full_env, cwd=cwd)
        self.pid = self.p.pid
        self.lines = queue.Queue()
        self.seen = []

        def pump():
            for line in self.p.stdout:
                self.lines.put(line.rstrip("\n"))
            self.lines.put(None)
        threading.Thread(target=pump, daemon=True).start()

    def expect(self, prefix, timeout=30):
        import queue
        import time
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


@pytest.fixture
def spawn():
    """Starts target processes and kills any still running at teardown."""
    procs = []

    def start(argv, **kw):
        proc = Proc(argv, **kw)
        procs.append(proc)
        return proc
    yield start
    for proc in procs:
        left = [f for pid in family(proc.pid) for f in our_files(pid)]
        proc.kill()
        for path in left:
            remove(path)


def remove(path):
    """Removes a file, a symlink or a directory tree; quiet if gone."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


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


def our_files(pid):
    """What an attach left on the host for pid: its runtime directories
    and a library copy under /tmp, to remove once it is gone."""
    found = [f"/tmp/{n}" for n in os.listdir("/tmp")
             if n.startswith(f"mwrap.{pid}.")]
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


LEAK_RB = os.path.join(ROOT, "tests", "targets", "leak.rb")
# Small allocations a leak line makes beside its strings (the KEEP
# array's growth, first-call caches): Ruby 3.3 makes up to 11 more there
# than 3.1 (leak 10: 15, leak 5: 10, leak 100: 109, leak 200: 211),
# never a string.
LINE_SLACK = 10


def private_tmp(tmp, unshare=("--mount",), name="private"):
    """A /tmp of a container-like target's own: tmp/NAME, mode 1777,
    holding leak.rb (world-readable); skips where unshare UNSHARE is
    not permitted."""
    probe = run(["unshare", *unshare, "true"])
    if probe.returncode != 0:
        pytest.skip(f"unshare not permitted here: {probe.stderr.strip()}")
    private = tmp / name
    private.mkdir()
    os.chmod(private, 0o1777)
    with open(LEAK_RB) as src, open(private / "leak.rb", "w") as dst:
        dst.write(src.read())
    os.chmod(private / "leak.rb", 0o644)
    return private


def start_ready(spawn, argv, **kw):
    """Starts a target (spawn's keywords, e.g. env) and waits for its
    "ready" line: (target, the line's key=value words as a dict)."""
    t = spawn(argv, **kw)
    ready = t.expect("ready")
    return t, dict(w.split("=", 1) for w in ready.split() if "=" in w)


def start_leak(spawn):
    """tests/targets/leak.rb: (target, its leaking line, its zlib line)."""
    t, fields = start_ready(spawn, ["ruby", LEAK_RB])
    return t, int(fields["leak_line"]), int(fields["zlib_line"])


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


def ptrace_allowed():
    """Why live attach cannot run here, or None."""
    if os.geteuid() == 0:
        return None
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except OSError:
        scope = 0
    return None if scope == 0 else f"ptrace_scope={scope} and not root"


@functools.lru_cache(maxsize=None)
def gdb_unusable():
    """Why the gdb backend cannot attach here, or None: no gdb, or a gdb
    that cannot restore the processes it calls into (Debian 12's gdb
    13.1 on a CPU with AMX), as mwrap-attach --check-gdb finds.  Tests
    that drive gdb skip with this reason; test_gdb_probe checks the
    refusal itself."""
    if shutil.which("gdb") is None:
        return "gdb not installed"
    p = run([ATTACH, "--check-gdb"], timeout=120)
    if p.returncode == 0:
        return None
    return "the gdb here fails mwrap-attach --check-gdb: " + \
        p.stderr.strip().splitlines()[0]


def skip_unless_gdb_works():
    reason = gdb_unusable()
    if reason:
        pytest.skip(reason)


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


def attach(args, timeout=60):
    return run([ATTACH] + args, timeout=timeout)


def attach_during(pids, args, act, interrupt=False):
    """mwrap-attach -p PIDS ARGS, with ACT(its Popen) called once every
    pid's helper answers (or 30 s), then Ctrl-C when INTERRUPT (ends the
    window): (exit code, stdout, stderr)."""
    proc = subprocess.Popen([ATTACH, "-p", ",".join(map(str, pids))] + args,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + scaled(30)
        while not all(helper_answered(p) for p in pids) and \
                proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        act(proc)
        if interrupt:
            proc.send_signal(2)
        out, err = proc.communicate(timeout=scaled(90))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=scaled(10))
    return proc.returncode, out, err


CHROMIUM = shutil.which("chromium")


def chromium(args, tmp):
    """Debian's chromium, headless, with its profile in tmp and nothing
    fetched from the network; a fixed layout (no scrollbars)."""
    return run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                f"--user-data-dir={tmp / 'chrome-profile'}"] + args, timeout=120)


# Inserted into an HTML report (before </body>): each drawn frame of its
# flame graph as [title, left, top, width, class] in data-frames; with
# window.CLICK (a title's start; window.DEPTH: on that row) set, the frames
# after a click on that frame in data-zoomed and, unless window.STAY,
# after a second click on it (back out) in data-back; with window.SEARCH,
# the search's words in data-found and the highlighted frames in
# data-matched.
FLAME_FRAMES = """<script>
function frames() {
  var out = [];
  document.querySelectorAll("#flame g.frame").forEach(function (g) {
    var r = g.querySelector("rect").getBoundingClientRect();
    out.push([g.querySelector("title").textContent, Math.round(r.left), Math.round(r.top),
              Math.round(r.width), g.getAttribute("class")]);
  });
  return out;
}
document.body.dataset.frames = JSON.stringify(frames());
if (window.CLICK) {
  var g = Array.prototype.find.call(document.querySelectorAll("#flame g.frame"), function (g) {
    return g.querySelector("title").textContent.indexOf(window.CLICK) === 0 &&
      (window.DEPTH === undefined || g.getAttribute("data-depth") === String(window.DEPTH));
  });
  g.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  document.body.dataset.zoomed = JSON.stringify(frames());
  if (!window.STAY) {
    g = document.querySelector("#flame g.zoomed");
    g.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
    document.body.dataset.back = JSON.stringify(frames());
  }
}
if (window.SEARCH) {
  var box = document.getElementById("flame-search");
  box.value = window.SEARCH;
  box.dispatchEvent(new Event("input"));
  document.body.dataset.found = document.getElementById("flame-found").textContent;
  document.body.dataset.matched = JSON.stringify(frames().filter(function (f) {
    return / match/.test(f[4]); }).map(function (f) { return f[0].split(": ")[0]; }));
}
document.body.dataset.pageWidth = document.documentElement.scrollWidth;
</script></body>"""


def flame_frames(dom, attr="frames"):
    """The frames listed in the DOM's data-ATTR (FLAME_FRAMES):
    {name: (left, top, width)}; a name drawn twice keeps its first."""
    m = re.search(f'data-{attr}="([^"]*)"', dom)
    out = {}
    for t, x, y, w, _ in json.loads(html.unescape(m.group(1))):
        out.setdefault(t.split(": ")[0], (x, y, w))
    return out


def with_vars(script, **kw):
    """SCRIPT after a <script> setting window's KW."""
    return "<script>" + "".join(f"window.{k} = {json.dumps(v)};" for k, v in kw.items()) + \
        "</script>" + script


def by_location(frames, location):
    """The frames drawn for LOCATION ("path:line"): [(left, top, width)]."""
    return [v for k, v in frames.items() if k.startswith(f"{location} in ")]


FLAME_ROW, FLAME_WIDTH = 18, 1200   # scripts/lib/mwrap_flame_html.rb's ROW, WIDTH


def check_flame_rooted_at(page, tmp, helper, callers, ratio, tolerance, shots):
    """PAGE (an HTML report) in headless Chromium: the flame graph's top
    row has HELPER ("path:line") as its widest box, and beneath it exactly
    CALLERS (two "path:line") side by side, the first at its left, their
    widths at RATIO within TOLERANCE (relative), filling at least 95% of
    it; a click on the second caller zooms it to the full width with the
    helper above it and the first caller gone.  The page and screenshots
    of it (1400x1000) before and after the click are saved as
    build/SHOTS.html, build/SHOTS.png and build/SHOTS-zoomed.png (each
    screenshot over 10 KB)."""
    first, second = callers
    html = page.read_text()
    measured = tmp / "flame-measured.html"
    measured.write_text(html.replace("</body>", with_vars(FLAME_FRAMES, CLICK=f"{second} in ",
                                                          DEPTH=1, STAY=True)))
    p = chromium(["--window-size=1400,1400", "--dump-dom", f"file://{measured}"], tmp)
    assert p.returncode == 0, p.stderr
    assert 'data-flame-view="alloc"' in p.stdout
    frames = flame_frames(p.stdout)

    # the top row: the helper's line, the widest box, at the left
    top_box = by_location(frames, helper)
    assert len(top_box) == 1, frames
    left, top, width = top_box[0]
    assert all(y >= top for _, y, _ in frames.values())
    assert all(w <= width for _, y, w in frames.values() if y == top), frames
    # beneath it exactly its two callers, side by side, in their ratio
    row = top + FLAME_ROW
    under = {k: v for k, v in frames.items() if v[1] == row and left <= v[0] < left + width}
    a = by_location(under, first)
    b = by_location(under, second)
    assert len(a) == 1 and len(b) == 1 and len(under) == 2, under
    (ax, _, aw), (bx, _, bw) = a[0], b[0]
    print(f"flame graph: helper {width} px wide, callers {aw} and {bw} px ({aw / bw:.2f}:1)")
    assert ax == left and bx >= ax + aw - 1
    assert abs(aw / bw / ratio - 1) <= tolerance, (aw, bw)
    # the two callers fill the helper's box (its own array's growth
    # aside: at most a few percent)
    assert aw + bw >= 0.95 * width, (aw, bw, width)

    # a click on the second caller: it fills the width, the helper above it
    zoomed = flame_frames(p.stdout, "zoomed")
    z = [f for f in by_location(zoomed, second) if f[1] == row]
    assert len(z) == 1 and z[0][0] == left and z[0][2] >= FLAME_WIDTH - 2, zoomed
    assert by_location(zoomed, helper)[0][2] >= FLAME_WIDTH - 2
    assert not by_location(zoomed, first)
    assert f'data-flame-zoom="{second} in ' in p.stdout

    # the screenshots, kept in build/ beside the page
    build = os.path.join(ROOT, "build")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, f"{shots}.html"), "w") as f:
        f.write(html)
    # the page after the click: the measuring script clicked and stayed
    for shot, source in ((f"{shots}.png", page), (f"{shots}-zoomed.png", measured)):
        shot = os.path.join(build, shot)
        p = chromium([f"--screenshot={shot}", "--window-size=1400,1000", f"file://{source}"], tmp)
        assert p.returncode == 0 and os.path.getsize(shot) > 10_000, p.stderr


@functools.lru_cache(maxsize=None)
def ruby_version():
    """The `ruby` in PATH's RUBY_VERSION as a tuple of ints ((4, 1, 0))."""
    p = subprocess.run(["ruby", "-e", "print RUBY_VERSION"], timeout=scaled(60),
                       capture_output=True, text=True,
                       env=dict(os.environ, RUBYOPT=""))
    return tuple(int(x) for x in p.stdout.split("."))


def gc_line_bytes():
    """Bytes the GC's own bookkeeping may add to a Ruby line on which GCs
    run, beyond what a test allows for the line itself.  A GC started by
    an allocation allocates there (measured with native stacks of the
    small blocks charged to a line): on every Ruby its mark-stack chunks
    (4,008 B, stack_chunk_alloc, as the stack outgrows its cache); from
    Ruby 4.0 also its weak-reference list, an rb_darray shrunk after each
    GC to twice what it used and regrown by doubling reallocs during the
    next one's marking (1,040 to 8,208 B each; mark_cc_entry_i).  Ruby
    4.1's versions script put up to 20 chunks and 32 reallocs, 129,800 B
    in all, on one line: 0 before 4.0 (the tests' own slack holds 3.x's
    chunks), 128 KiB from 4.0."""
    return 131072 if ruby_version() >= (4,) else 0


@functools.lru_cache(maxsize=None)
def ruby_lacks(feature):
    """Why `ruby` cannot require @feature, or None: a Ruby built from
    source without its bundled gems (make test-ruby-src) has no fiddle
    from 4.0 on (a bundled gem since), and Debian's is built for Debian's
    own Ruby only."""
    p = subprocess.run(["ruby", "-e", f"require {feature!r}"], timeout=scaled(60),
                       capture_output=True, text=True)
    if p.returncode == 0:
        return None
    return (f"this ruby cannot require {feature} (a bundled gem there, and "
            f"a source build without bundled gems lacks it)")


def fiddle_leak():
    """tests/targets/fiddle_leak.rb (100,000 x Fiddle.malloc(1024), half
    freed): (its text, the line of its Fiddle.malloc)."""
    with open(os.path.join(ROOT, "tests", "targets", "fiddle_leak.rb")) as f:
        text = f.read()
    return text, next(i for i, l in enumerate(text.splitlines(), 1) if "Fiddle.malloc" in l)


SOURCE_LINE = re.compile(r"(/[^\s:()]+\.(?:rb|rsb|erb|ru|rake)):(\d+)")


def first_source_line(text):
    """The first "path:line" of Ruby source a report names, or None: what
    a reader meets first."""
    m = SOURCE_LINE.search(text)
    return f"{m.group(1)}:{m.group(2)}" if m else None


def site_rows(lines):
    """The rows of a text report's site table (innermost lines): the
    lines after its column header; the application table above it names
    the same locations with other columns."""
    for i, line in enumerate(lines):
        if "total_bytes" in line and line.rstrip().endswith("location"):
            return lines[i + 1:]
    return []


def site_value(lines, location, column):
    """COLUMN (a header's name, one of those before growth and location)
    of LOCATION's row in a text report's site table, as an int."""
    rows = site_rows(lines)
    header = lines[len(lines) - len(rows) - 1].split()
    row = next(l for l in rows if l.endswith(location))
    return int(row.split()[header.index(column)])


def sections(text):
    """'=== title ===' sections of a multi-process report."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("=== "):
            name = line.strip("= ")
            out[name] = []
        elif name:
            out[name].append(line)
    return out
