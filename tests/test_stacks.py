# SPDX-License-Identifier: MIT
"""--stacks: a leak inside one gem-like helper (tests/targets/gemlike/
helper.rb), called from two application lines of stacks_app.rb at rates
10:1.  The innermost line is the helper's for both; with stacks the
report (--focus, --group=stack) names each application line with its own
bytes, attached and preloaded, and pprof shows the callers."""
import json
import os
import shutil
import re
import time

import pytest

from conftest import (ATTACH, CHROMIUM, MWRAP, ROOT, attach, attach_during, chromium,
                      during_window, first_source_line, gc_line_bytes, parse_json_dump,
                      needs_ptrace, run, ruby_version, start_ready)

APP = os.path.join(ROOT, "tests", "targets", "stacks_app.rb")
HELPER = os.path.join(ROOT, "tests", "targets", "gemlike", "helper.rb")
REPORT = os.path.join(ROOT, "scripts", "mwrap-report")

# Beside each string the helper keeps, STORE's buffer grows (up to 8
# bytes per element, on the helper's line, under whichever caller made it
# grow, doubled when full; Ruby 3.3 may keep the buffer it outgrew until
# a GC: 20 per element seen): at most this many bytes per kept string, on
# either line.
ARRAY_SLACK = 32


def frame_is(frame, path, line, method):
    """FRAME is "PATH:LINE in LABEL", LABEL naming METHOD or a block in
    it: Ruby 3.1 names a block by its method's entry ("handle_upload"),
    a block of top-level code "block in ...", 3.4 adds the class
    ("Object#handle_upload")."""
    return re.fullmatch(re.escape(f"{path}:{line} in ") +
                        r"(block (\(\d+ levels\) )?in )?(\w+[#.])?" +
                        re.escape(method), frame) is not None


def start_app(spawn, **kw):
    t, f = start_ready(spawn, ["ruby", APP], **kw)
    return t, int(f["upload_line"]), int(f["ping_line"]), int(f["keep_line"])


def report_rows(text):
    """A JSON report's site rows, in its order."""
    return [json.loads(l) for l in text.splitlines()
            if l.strip() and json.loads(l)["type"] == "site"]


def is_transient_heap_arena(row):
    """Whether a report row is Ruby 3.2's transient heap's arena."""
    return (ruby_version()[:2] == (3, 2) and row["allocations"] == 1 and
            row["total_bytes"] == row["live_bytes"] == 32 << 20)


def check_exact(rows, upload, ping, rounds, size):
    """The two application lines first, apart and right: 10 and 1 kept
    strings of SIZE bytes per round, within the array's slack."""
    by_loc = {r["location"]: r for r in rows}
    up, pi = by_loc[f"{APP}:{upload}"], by_loc[f"{APP}:{ping}"]
    kept = 11 * rounds
    assert up["live_bytes"] >= 10 * rounds * size, up
    assert up["live_bytes"] <= 10 * rounds * size + ARRAY_SLACK * kept, up
    assert pi["live_bytes"] >= rounds * size, pi
    assert pi["live_bytes"] <= rounds * size + ARRAY_SLACK * kept, pi
    # the uploads lead; among the application's lines the pings come next
    # (preloaded, Ruby's own boot holds ~1.2 MiB at native sites, and Ruby
    # 3.2's also its transient heap's arena: one block of 32 MiB taken at
    # boot by Init_TransientHeap through rb_aligned_malloc (posix_memalign)
    # and kept for good; 3.3 dropped the transient heap, and Debian's 3.1
    # shows no such block: a bare 32 MiB mapping instead)
    ahead = rows[:rows.index(up)]
    assert len(ahead) <= 1 and all(map(is_transient_heap_arena, ahead)), ahead
    assert [r["location"] for r in rows if r["location"].startswith(APP + ":")][:2] == \
        [up["location"], pi["location"]]


@needs_ptrace
def test_attached_stacks_focus_names_the_application_lines(spawn):
    t, upload, ping, keep = start_app(spawn)
    # --sample=1: every allocation is recorded (p = 1 - exp(-size))
    p = attach(["-p", str(t.pid), "--keep", "--stacks=8", "--sample=1"])
    assert p.returncode == 0, p.stderr
    rounds, size = 200, 10_000
    t.send(f"serve {rounds} {size}")
    t.expect("served", timeout=60)

    # the raw dump: the helper's line, once per caller, with its stack
    p = attach(["-p", str(t.pid), "--dump", "--format=json", "--group=stack"])
    assert p.returncode == 0, p.stderr
    rows = report_rows(p.stdout)
    top = rows[:2]
    assert [r["location"] for r in top] == [f"{HELPER}:{keep}"] * 2
    assert frame_is(top[0]["stack"][0], HELPER, keep, "remember"), top[0]
    assert frame_is(top[0]["stack"][1], APP, upload, "handle_upload"), top[0]
    assert frame_is(top[1]["stack"][1], APP, ping, "handle_ping"), top[1]

    # by line (the default): one row for the helper, both callers' bytes
    p = attach(["-p", str(t.pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    rows = report_rows(p.stdout)
    assert rows[0]["location"] == f"{HELPER}:{keep}"
    assert rows[0]["live_bytes"] >= 11 * rounds * size

    # --focus: the application's lines, ranked apart and right
    p = attach(["-p", str(t.pid), "--dump", "--format=json",
                "--focus", os.path.dirname(APP) + "/stacks_"])
    assert p.returncode == 0, p.stderr
    check_exact(report_rows(p.stdout), upload, ping, rounds, size)
    p = attach(["-p", str(t.pid), "--dump", "--focus", APP])
    assert p.returncode == 0, p.stderr
    assert f"(by line, named by the first frame under {APP})" in p.stdout
    locs = [l.split()[-1] for l in p.stdout.splitlines()
            if l.split() and l.split()[-1].startswith(APP + ":")]
    assert locs[:2] == [f"{APP}:{upload}", f"{APP}:{ping}"], p.stdout

    p = attach(["-p", str(t.pid), "--detach"])
    assert p.returncode == 0, p.stderr
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == [f"bye {11 * rounds}"]


def sample_window(spawn, tmp, args, rounds, size, env=None, depth=1):
    """A -d 30 window with ARGS over ROUNDS of the app's serve (the
    helper DEPTH frames deep), ended by Ctrl-C once they are done:
    (target, upload, ping, keep lines, report text)."""
    t, upload, ping, keep = start_app(spawn, env=env)
    out = tmp / "r.out"

    def serve(_):
        t.send(f"serve {rounds} {size} 10 1 {depth}")
        t.expect("served", timeout=60)
    code, _, err = attach_during([t.pid], ["-d", "30", *args, "-o", str(out)], serve,
                                 interrupt=True)
    assert code == 0, err
    return t, upload, ping, keep, out.read_text()


@needs_ptrace
def test_default_window_names_a_gems_callers_with_exact_lines(spawn, tmp):
    """26.1: with no flag but the window, the helper's line (in a gem
    directory: the target's GEM_PATH) keeps its exact bytes, and under
    it the report names its two application callers, heaviest first,
    with their shares (10:1 from about one stack per 64 KiB)."""
    rounds, size = 100, 65_536
    t, upload, ping, keep, text = sample_window(
        spawn, tmp, [], rounds, size,
        env={"GEM_PATH": os.path.dirname(HELPER)})
    lines = text.splitlines()
    row = next(i for i, l in enumerate(lines) if l.endswith(f"{HELPER}:{keep}"))
    live = int(lines[row].split()[0])
    kept = 11 * rounds
    # plus, from Ruby 4.0, the GC's bookkeeping kept between GCs that ran
    # on this line (gc_line_bytes: Ruby 4.1, 33,112 B over the array's
    # slack)
    assert 11 * rounds * size <= live <= \
        11 * rounds * size + ARRAY_SLACK * kept + gc_line_bytes(), lines[row]
    callers = [l.split("called from ", 1)[1] for l in lines[row + 1:row + 4]
               if "called from " in l]
    assert [c.split(" (")[0] for c in callers[:2]] == \
        [f"{APP}:{upload}", f"{APP}:{ping}"], text
    share = int(callers[0].split(" (")[1].rstrip("%)"))
    # 1,000 and 100 strings of 64 KiB, each stack taken with p = 0.63
    assert 85 <= share <= 95, text
    t.finish()


# Ruby frames between an allocation and its application line in a Rails
# request: Redmine's ActiveRecord queries allocate 27 to 31 frames below
# their first application frame
FRAMEWORK_DEPTH = 30


@needs_ptrace
def test_default_window_reaches_the_application_under_a_framework(spawn, tmp):
    """With no flag but the window, the recorded stacks reach the
    application through a framework's depth: the gem's line kept
    FRAMEWORK_DEPTH frames below the application's is ranked under its
    callers, the first of them on top, and it names them."""
    rounds, size = 100, 65_536
    t, upload, ping, keep, text = sample_window(
        spawn, tmp, [], rounds, size, env={"GEM_PATH": os.path.dirname(HELPER)},
        depth=FRAMEWORK_DEPTH)
    assert first_source_line(text) == f"{APP}:{upload}", text
    lines = text.splitlines()
    row = next(i for i, l in enumerate(lines) if l.endswith(f"{HELPER}:{keep}"))
    assert "called from " + f"{APP}:{upload} (" in lines[row + 1], text
    t.finish()


@needs_ptrace
def test_default_window_focus_ranks_the_callers_by_estimates(spawn, tmp):
    """--focus (stacks are on by default): the application's lines ranked
    by estimates from the sampled stacks, within the tolerance the
    sample sizes give; the lines' own figures stay exact."""
    rounds, size = 100, 65_536
    t, upload, ping, _, text = sample_window(
        spawn, tmp, ["--format=json", "--focus", APP], rounds, size)
    header = json.loads(text.splitlines()[0])
    assert header["sample_bytes"] == 0 and header["stack_sample_bytes"] == 65_536
    rows = report_rows(text)
    assert [r["location"] for r in rows[:2]] == [f"{APP}:{upload}", f"{APP}:{ping}"]
    # 1,000 and 100 strings of 64 KiB, each recorded with p = 0.63: the
    # estimates' relative deviations are about 2% and 8%
    assert abs(rows[0]["live_bytes"] - 10 * rounds * size) <= 0.15 * 10 * rounds * size
    assert abs(rows[1]["live_bytes"] - rounds * size) <= 0.40 * rounds * size
    t.finish()


OVERFLOW = os.path.join(ROOT, "tests", "targets", "stack_overflow.rb")


def test_a_stack_overflow_stays_rubys():
    """Ruby raises SystemStackError with 16 KiB of a fiber's machine stack
    left: a stack taken in a hook there (the deepest, 64 frames, on every
    allocation) must fit in what is left, or the hook itself overflows
    and Ruby's SEGV handler unwinds it with what it held (a 32 KiB text
    buffer did: the process spun; 16 KiB overflowed, shallower).
    Recursion through C frames to SystemStackError, in fibers with the
    least machine stack Ruby allows and in threads (a fifth of theirs
    left; our library's TLS takes a little of it, so they may end a few
    frames sooner): each rescued, the fibers at the depths they reach
    untraced."""
    env = {"RUBY_FIBER_MACHINE_STACK_SIZE": str(256 << 10)}
    plain = run(["ruby", OVERFLOW, "20"], env=env, timeout=60)
    assert plain.returncode == 0 and plain.stdout.startswith("ok 40 "), plain.stderr
    p = run([MWRAP, "ruby", OVERFLOW, "20"], timeout=60,
            env={**env, "MWRAP": "stacks:64,stack_sample:1"})
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    fibers = plain.stdout.split(" threads ")[0]
    assert p.stdout.startswith(fibers + " threads "), (p.stdout, plain.stdout)


def test_no_stacks_refuses_what_needs_them():
    for args in (["--focus", "app/"], ["--group=stack"]):
        p = attach(["-p", "1", "--no-stacks", *args])
        assert p.returncode == 2 and "--no-stacks" in p.stderr, p.stderr


def preload_dump(tmp, rounds, size, depth=8):
    dump = tmp / "pre.json"
    p = run([MWRAP, "ruby", APP], env={
        "MWRAP": f"stacks:{depth},dump_format:json,dump_path:{dump}"},
        input=f"serve {rounds} {size}\n", timeout=120)
    assert p.returncode == 0, p.stderr
    words = dict(w.split("=") for w in p.stdout.split() if "=" in w)
    return dump, int(words["upload_line"]), int(words["ping_line"]), \
        int(words["keep_line"])


def test_preload_stacks_with_mwrap_report(tmp):
    rounds, size = 100, 10_000
    dump, upload, ping, keep = preload_dump(tmp, rounds, size)
    header, sites = parse_json_dump(dump.read_text())
    assert f"{HELPER}:{keep}" in sites
    # at exit no GC judges the last work: the kept strings, made after
    # Ruby's last GC, rank by live bytes, not as in flight
    assert header["at_exit"] is True
    p = run([REPORT, str(dump)])
    assert "taken as the process exited: rows rank by live bytes" in p.stdout, p.stdout
    p = run([REPORT, "--format=json", "--focus", APP, str(dump)])
    assert p.returncode == 0, p.stderr
    check_exact(report_rows(p.stdout), upload, ping, rounds, size)
    p = run([REPORT, "--group=stack", "--min", "900000", str(dump)])
    assert p.returncode == 0, p.stderr
    froms = [l.split("from ", 1)[1] for l in p.stdout.splitlines() if " from " in l]
    assert any(frame_is(f, APP, upload, "handle_upload") for f in froms), p.stdout
    assert any(frame_is(f, APP, ping, "handle_ping") for f in froms), p.stdout
    p = run([REPORT, "--group=file", "--format=json", str(dump)])
    assert p.returncode == 0, p.stderr
    rows = report_rows(p.stdout)
    # the helper's file leads; on Ruby 3.2 libruby's may come first by its
    # transient heap's arena alone (32 MiB, check_exact): less it, behind
    if ruby_version()[:2] == (3, 2) and rows[0]["location"] != HELPER:
        assert rows[0]["live_bytes"] - (32 << 20) < rows[1]["live_bytes"], rows[:2]
        rows = rows[1:]
    assert rows[0]["location"] == HELPER
    p = run([REPORT, "--group=nope", str(dump)])
    assert p.returncode == 2 and "--group must be" in p.stderr


def test_bad_stack_depths_are_refused(tmp):
    p = run([MWRAP, "ruby", "-e", "1"], env={"MWRAP": "stacks:65"})
    assert "bad stack depth" in p.stderr
    p = attach(["-p", "1", "--stacks=0"])
    assert p.returncode == 2 and "--stacks wants" in p.stderr


@pytest.mark.skipif(shutil.which("go") is None, reason="go not installed")
def test_pprof_stacks_show_the_application_frames(tmp):
    rounds, size = 100, 10_000
    dump, upload, ping, keep = preload_dump(tmp, rounds, size)
    prof = tmp / "p.pb.gz"
    p = run([REPORT, "--format=pprof", "-o", str(prof), str(dump)])
    assert p.returncode == 0, p.stderr
    # pprof writes under HOME; Go 1.24 and later build it on its first use
    # (sid's Go 1.27: about a minute on 2 loaded CPUs) into the build
    # cache, kept where go keeps it for the real HOME
    gocache = run(["go", "env", "GOCACHE"]).stdout.strip()
    env = {"HOME": str(tmp), "PPROF_TMPDIR": str(tmp), "GOCACHE": gocache}
    p = run(["go", "tool", "pprof", "-traces", "-sample_index=inuse_space",
             str(prof)], env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    # one trace per caller: the helper's frame, then the application's
    traces = p.stdout.split("-----------+")
    up = [tr for tr in traces if f"{APP}:{upload} in " in tr]
    assert up and f"{HELPER}:{keep} in " in up[0], p.stdout
    assert up[0].index("remember") < up[0].index("handle_upload")
    p = run(["go", "tool", "pprof", "-top", "-cum", "-sample_index=inuse_space",
             str(prof)], env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    names = [l.split(None, 5)[5] for l in p.stdout.splitlines()
             if APP in l and len(l.split(None, 5)) == 6]
    # by cumulative bytes: the uploads' frames before the pings'
    first_up = min(i for i, n in enumerate(names) if "handle_upload" in n)
    first_ping = min(i for i, n in enumerate(names) if "handle_ping" in n)
    assert first_up < first_ping, names


@needs_ptrace
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_window_html_shows_growth_and_the_stacks(spawn, tmp):
    """One window's HTML report, --stacks: the growth chart over the
    window and the flame graph of the two callers, in one screenshot
    (window-stacks.png in the test's directory)."""
    t, upload, ping, _ = start_app(spawn)

    def serve():    # in batches over the window, so that the chart rises
        for _ in range(5):
            t.send("serve 20 10000")
            t.expect("served", timeout=60)
            time.sleep(0.8)
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", "6", "--stacks=8",
                                  "--sample=1", "--format=html"], t.pid, serve)
    assert rc == 0, err
    assert '<svg id="growth"' in out and '<svg id="flame"' in out
    assert f"{APP}:{upload} in " in out and f"{APP}:{ping} in " in out
    page = tmp / "window-stacks.html"
    page.write_text(out)
    shot = tmp / "window-stacks.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1400,1400", f"file://{page}"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 10_000, p.stderr


@needs_ptrace
def test_a_cluster_gets_the_callers_in_its_merged_view_first(spawn):
    """26.2: two processes (-p A,B; --children-of runs the same way), the
    load all on A: the merged view comes first and names the gem line's
    callers; --focus ranks the application lines there too."""
    env = {"GEM_PATH": os.path.dirname(HELPER)}
    (a, upload, ping, keep), (b, _, _, _) = start_app(spawn, env=env), start_app(spawn, env=env)
    rounds, size = 60, 65_536

    def serve():
        a.send(f"serve {rounds} {size}")
        a.expect("served", timeout=60)
    for args in ([], ["--focus", APP]):
        rc, out, err = during_window([ATTACH, "-p", f"{a.pid},{b.pid}", "-d", "4", *args],
                                     a.pid, serve)
        assert rc == 0, err
        merged, _, sections = out.partition(f"\n=== process ")
        assert merged.startswith("=== merged view of 2 of 2 processes ===\n"), out
        assert f"=== process {b.pid} ===" in out
        if not args:
            assert f"{HELPER}:{keep}" in merged
            assert f"called from {APP}:{upload} (" in merged, merged
        else:
            locs = [l.split()[-1] for l in merged.splitlines()
                    if l.split() and l.split()[-1].startswith(APP + ":")]
            assert locs[:2] == [f"{APP}:{upload}", f"{APP}:{ping}"], merged
    a.finish()
    b.finish()
