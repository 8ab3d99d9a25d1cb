# SPDX-License-Identifier: MIT
"""Growth over the window: the window samples the
tracked live bytes and the top sites every half second; the report gives
each site's slope and whether it still rose at the end, so a leak
(rising to the end) reads apart from a cache that filled, then levelled
off.  The label holds still window after window (a
buffer that jumps once, then holds, reads levelled), --gc's collection
is no fall, and focused rows and a cluster's merged view carry growth
(the classifier itself: test_growth_labels.py)."""
import json
import os
import time

import pytest

from conftest import ATTACH, CHROMIUM, LEAK_RB, ROOT, chromium, during_window, \
    ptrace_allowed, start_ready

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
GROWTH_RB = os.path.join(ROOT, "tests", "targets", "growth.rb")
STACKS_APP = os.path.join(ROOT, "tests", "targets", "stacks_app.rb")
WINDOW = 9


def window_report(spawn, fmt, tmp=None):
    """Attaches to the growth target for WINDOW s, starting its leak and
    cache the moment the window opens: (report text, target's leak bytes,
    its seconds, leak file:line, cache file:line)."""
    t, f = start_ready(spawn, ["ruby", GROWTH_RB])
    leak = f"{GROWTH_RB}:{f['leak_line']}"
    cache = f"{GROWTH_RB}:{f['cache_line']}"
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", str(WINDOW),
                                  f"--format={fmt}"], t.pid,
                                 lambda: t.send("go"))
    assert rc == 0, err
    rc, lines, _ = t.finish()
    assert rc == 0
    _, leaked, seconds = lines[-1].split()
    return out, int(leaked), float(seconds), leak, cache


def test_json_series_tells_a_leak_from_a_cache(spawn):
    out, leaked, seconds, leak, cache = window_report(spawn, "json")
    recs = [json.loads(line) for line in out.splitlines()]
    series = next(r for r in recs if r["type"] == "series")
    sites = {r["location"]: r for r in recs if r["type"] == "site"}
    # a sample every half second, plus the last one
    assert 2 * WINDOW - 2 <= len(series["t"]) <= 2 * WINDOW + 3, series["t"]
    assert len(series["live_bytes"]) == len(series["t"])
    assert series["t"] == sorted(series["t"])
    assert len(series["sites"][leak]) == len(series["t"])
    # the cache whole (40 x 100,000 B: the window opened at "go"), the
    # leak in strings of 20,000 B each; beside them only small blocks
    # (Ruby 3.3 grows the arrays that keep them on the same lines)
    assert 4_000_000 <= sites[cache]["live_bytes"] < 4_000_000 + 20_000
    assert sites[cache]["live_count"] >= 40
    n = sites[leak]["live_count"]
    assert 20_000 * (n - 10) <= sites[leak]["live_bytes"] <= 20_000 * n
    assert sites[leak]["growth"] == "rising"
    assert sites[cache]["growth"] == "levelled"
    # the leak's slope is its own rate (bytes kept / seconds run), within
    # a factor of 2 either way: a loaded machine delays samples
    rate = leaked / seconds
    assert rate / 2 <= sites[leak]["growth_bytes_per_s"] <= rate * 2


def test_text_report_shows_growth(spawn):
    out, _, _, leak, cache = window_report(spawn, "text")
    assert "tracked live over the window:" in out
    rows = {line.split()[-1]: line for line in out.splitlines()
            if line.endswith((leak, cache))}
    assert "/s rising" in rows[leak]
    assert "/s levelled" in rows[cache]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_html_draws_the_growth_chart(spawn, tmp):
    out, _, _, leak, _ = window_report(spawn, "html")
    assert 'id="growth"' in out and out.count('class="series"') >= 3
    page = tmp / "report.html"
    page.write_text(out)
    shot = tmp / "growth.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1400,1000",
                  f"file://{page}"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 10_000, p.stderr
    dom = chromium(["--dump-dom", f"file://{page}"], tmp)
    assert 'id="growth"' in dom.stdout and leak.split("/")[-1] in dom.stdout


def json_window(argv, pid, action):
    """An mwrap-attach window (--format=json) run while ACTION runs:
    (header, {location: site record}, series record)."""
    rc, out, err = during_window([ATTACH, *argv, "--format=json"], pid, action)
    assert rc == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    sites = {r["location"]: r for r in recs if r["type"] == "site"}
    series = next(r for r in recs if r["type"] == "series")
    return recs[0], sites, series


def start_steady(spawn):
    """growth.rb steady: (target, buffer file:line, leak file:line)."""
    t, f = start_ready(spawn, ["ruby", GROWTH_RB, "steady"])
    return t, f"{GROWTH_RB}:{f['buffer_line']}", f"{GROWTH_RB}:{f['leak_line']}"


TIMES = 10


def test_a_buffer_that_jumps_then_holds_reads_levelled_window_after_window(spawn):
    """The same buffer (2 MB at once, then still, beside noise on its
    line) once read rising in 4 of 9 windows.  Attached TIMES times for
    4 s, the buffer made anew as each window opens: levelled in at
    least 9; the steady leak beside it rising in every one."""
    t, buf, leak = start_steady(spawn)
    labels = {buf: [], leak: []}
    for _ in range(TIMES):
        _, sites, _ = json_window(["-p", str(t.pid), "-d", "4"], t.pid, lambda: t.send("step"))
        for loc in labels:
            labels[loc].append(sites[loc].get("growth"))
        t.expect("stepped")
    assert labels[buf].count("levelled") >= TIMES - 1, labels
    assert labels[leak] == ["rising"] * TIMES, labels
    t.finish()


def test_gc_garbage_is_not_read_as_growth(spawn):
    """--gc: a line making garbage all window long (collected by the
    final GC) grows by no more than it keeps, and the GC's drop is no
    fall; the leak beside it keeps rising at its own rate."""
    t, f = start_ready(spawn, ["ruby", LEAK_RB])
    garbage = f"{LEAK_RB}:{f['garbage_line']}"
    leak = f"{LEAK_RB}:{f['leak_line']}"
    size = 16384

    def churn():    # 320 KiB of garbage and 80 KiB of leak every 0.4 s
        end = time.monotonic() + 3.6
        while time.monotonic() < end:
            t.send(f"garbage 20 {size}")
            t.expect("garbage")
            t.send(f"leak 5 {size}")
            t.expect("leaked")
            time.sleep(0.4)
    header, sites, series = json_window(["-p", str(t.pid), "-d", "4", "--gc"], t.pid, churn)
    assert header["gc"] == "ran"
    # the last sample is the one after the GC
    assert series["gc_sample"] == len(series["t"]) - 1
    before = series["sites"][garbage][series["gc_sample"] - 1]
    assert before >= 2_000_000, series["sites"][garbage]
    g = sites.get(garbage)
    if g:
        assert g["growth"] != "falling", g
        assert g["growth_bytes_per_s"] * header["seconds"] <= g["live_bytes"] + size, g
    assert sites[leak]["growth"] == "rising", sites[leak]
    rate = sites[leak]["growth_bytes_per_s"]
    assert 5 * size / 0.4 / 2 <= rate <= 5 * size / 0.4 * 2, sites[leak]
    t.finish()


def test_focused_rows_carry_growth(spawn):
    """--focus: the application lines that called a gem-like helper
    carry its line's growth, in their shares of its bytes (10:1)."""
    t, f = start_ready(spawn, ["ruby", STACKS_APP])
    upload, ping = f"{STACKS_APP}:{f['upload_line']}", f"{STACKS_APP}:{f['ping_line']}"

    def serve():    # in batches over the window, so that the lines rise
        for _ in range(5):
            t.send("serve 20 10000")
            t.expect("served", timeout=60)
            time.sleep(0.7)
    _, sites, _ = json_window(["-p", str(t.pid), "-d", "4", "--stacks=8", "--sample=1",
                               "--focus", STACKS_APP], t.pid, serve)
    assert sites[upload]["growth"] == "rising", sites[upload]
    assert sites[ping]["growth"] == "rising", sites[ping]
    ratio = sites[upload]["growth_bytes_per_s"] / sites[ping]["growth_bytes_per_s"]
    assert 7 <= ratio <= 14, (sites[upload], sites[ping])
    t.finish()


def test_a_clusters_merged_view_carries_growth(spawn):
    """-p A,B: the merged view's sites carry the growth of the summed
    series: the two buffers levelled, the two leaks rising."""
    (a, buf, leak), (b, _, _) = start_steady(spawn), start_steady(spawn)

    def step():
        a.send("step")
        b.send("step")
    _, sites, _ = json_window(["-p", f"{a.pid},{b.pid}", "-d", "4"], a.pid, step)
    assert sites[buf]["growth"] == "levelled", sites[buf]
    assert sites[leak]["growth"] == "rising", sites[leak]
    a.finish()
    b.finish()
