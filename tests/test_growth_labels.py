# SPDX-License-Identifier: MIT
"""Growth labels on hand-made series: a window's dump
written here (a header, its sites, the series record) and read by
mwrap-report.  A label changes only on evidence larger than the series'
own noise: noise reads flat, a step then a flat line levelled, a ramp
rising, a cache that fills then stops levelled, whatever the noise's
draw; a site that first shows after the window began rose from 0;
--gc's collection at the end is no fall; focused rows, file rows and a
cluster's merged view carry growth; the HTML table has a growth column."""
import json
import os
import random

import pytest

from conftest import ROOT, run

pytestmark = pytest.mark.fast  # make test-fast

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
EVERY = 0.5         # seconds between samples, as mwrap-attach samples
SEEDS = range(10)   # draws of the noise: every one must read the same


def times(seconds):
    """A window's sample times: every EVERY s from 0, and its end."""
    t = [round(i * EVERY, 2) for i in range(int(seconds / EVERY) + 1)]
    return t if t[-1] == seconds else t + [seconds]


def noisy(ys, sigma, seed):
    """YS with normal noise of SIGMA bytes (never below 0)."""
    rng = random.Random(seed)
    return [max(0, round(y + rng.gauss(0, sigma))) for y in ys]


def write_dump(tmp, t, sites, unlisted=None, gc=None, header=None, stacks=()):
    """A window's dump in tmp: SITES {location: series}, each site's live
    bytes its last value; UNLISTED the series' unlisted_max, GC its
    gc_sample; STACKS stack records (location, stack frames, live)."""
    head = {"type": "header", "pid": 1, "seconds": t[-1], "sample_bytes": 0,
            "tracked_live_bytes": sum(ys[-1] or 0 for ys in sites.values())}
    head.update(header or {})
    lines = [head]
    for loc, ys in sites.items():
        live = ys[-1] or 0
        lines.append({"type": "site", "location": loc, "total_bytes": live, "allocations": 1,
                      "frees": 0, "freed_bytes": 0, "live_bytes": live, "live_count": 1})
    for loc, frames, live in stacks:
        lines.append({"type": "stack", "location": loc, "stack": frames, "total_bytes": live,
                      "allocations": 1, "frees": 0, "freed_bytes": 0, "live_bytes": live,
                      "live_count": 1})
    series = {"type": "series", "t": t,
              "live_bytes": [sum(ys[i] or 0 for ys in sites.values()) for i in range(len(t))],
              "sites": sites}
    if unlisted is not None:
        series["unlisted_max"] = unlisted
    if gc is not None:
        series["gc_sample"] = gc
    lines.append(series)
    path = tmp / "window.json"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return str(path)


def growth(path, *args):
    """{location: (growth label, bytes/s)} from mwrap-report's JSON."""
    p = run([REPORT, "--format=json", "--top", "0", *args, path])
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in p.stdout.splitlines()]
    return {r["location"]: (r.get("growth"), r.get("growth_bytes_per_s"))
            for r in rows if r["type"] == "site"}


def label(tmp, t, ys, **kw):
    return growth(write_dump(tmp, t, {"a.rb:1": ys}, **kw))["a.rb:1"][0]


@pytest.mark.parametrize("seconds", [4, 30])
def test_noise_about_a_level_reads_flat(tmp, seconds):
    t = times(seconds)
    got = [label(tmp, t, noisy([1_000_000] * len(t), 50_000, s)) for s in SEEDS]
    assert got == ["flat"] * len(SEEDS)


@pytest.mark.parametrize("seconds", [4, 9, 30])
def test_a_step_then_flat_reads_levelled_whatever_the_noise(tmp, seconds):
    """2 MB at 0.3 s, then still, beside noise of 5% of it: the series
    the buffer that once read rising in 4 of 9 windows."""
    t = times(seconds)
    step = [0 if x < 0.3 else 2_000_000 for x in t]
    got = [label(tmp, t, noisy(step, 100_000, s)) for s in SEEDS]
    assert got == ["levelled"] * len(SEEDS)


def test_one_high_sample_at_the_end_does_not_undo_levelled(tmp):
    """A step, flat for 8 s, then a last sample 3 noise's widths up: the
    slope over the last third alone (the old rule) read it rising."""
    t = times(9)
    ys = noisy([0 if x < 0.3 else 2_000_000 for x in t], 50_000, 1)
    ys[-1] = 2_000_000 + 150_000
    assert label(tmp, t, ys) == "levelled"


@pytest.mark.parametrize("seconds", [4, 30])
def test_a_steady_leak_reads_rising(tmp, seconds):
    t = times(seconds)
    for s in SEEDS:
        out = growth(write_dump(tmp, t, {"a.rb:1": noisy([400_000 * x for x in t], 20_000, s)}))
        state, rate = out["a.rb:1"]
        assert state == "rising", s
        assert 360_000 <= rate <= 440_000, s


def test_a_cache_that_fills_then_stops_reads_levelled(tmp):
    """4 MB over the first 2 s of 9, then still (tests/targets/growth.rb)."""
    t = times(9)
    fill = [min(x / 2, 1) * 4_000_000 for x in t]
    got = [label(tmp, t, noisy(fill, 40_000, s)) for s in SEEDS]
    assert got == ["levelled"] * len(SEEDS)


def test_too_few_samples_make_no_label(tmp):
    assert label(tmp, [0, 0.5, 1.0], [0, 1000, 2000]) is None


def test_a_site_first_listed_after_the_window_began_rose_from_zero(tmp):
    """Absent from the first samples, which listed fewer sites than their
    top (unlisted_max 0): it held 0 there, and the jump is a step."""
    t = times(4)
    ys = [None, None] + noisy([2_000_000] * (len(t) - 2), 50_000, 3)
    # the samples' own bound: nothing was left out of the first two
    assert growth(write_dump(tmp, t, {"a.rb:1": ys}, unlisted=[0] * len(t)))["a.rb:1"][0] == "levelled"
    # full samples whose least listed site held 3,000 B: it held at most that
    assert growth(write_dump(tmp, t, {"a.rb:1": ys}, unlisted=[3000] * len(t)))["a.rb:1"][0] == "levelled"
    # no bound (a series written before unlisted_max): unknown, not 0
    assert growth(write_dump(tmp, t, {"a.rb:1": ys}))["a.rb:1"][0] == "flat"
    # a bound above what it held later proves nothing either
    assert growth(write_dump(tmp, t, {"a.rb:1": ys}, unlisted=[5_000_000] * len(t)))["a.rb:1"][0] == "flat"


def test_gc_at_the_end_is_no_fall(tmp):
    """--gc's last sample, after the GC (gc_sample): a step kept whole
    stays levelled, a leak half of whose bytes were garbage stays rising
    at half its slope, a site that was all garbage reads flat."""
    t = times(4)
    step = noisy([0 if x < 0.3 else 2_000_000 for x in t], 50_000, 1)
    leak = [round(400_000 * x) for x in t]
    garbage = [round(300_000 * x) for x in t]
    sites = {"step.rb:1": step + [step[-1]], "leak.rb:1": leak + [leak[-1] // 2],
             "garbage.rb:1": garbage + [0]}
    out = growth(write_dump(tmp, t + [t[-1] + 0.01], sites, unlisted=[0] * (len(t) + 1), gc=len(t)))
    assert out["step.rb:1"][0] == "levelled"
    assert out["leak.rb:1"][0] == "rising" and 180_000 <= out["leak.rb:1"][1] <= 220_000
    assert out["garbage.rb:1"] == ("flat", 0.0)
    # read as an ordinary sample, the GC's drop is a fall
    out = growth(write_dump(tmp, t + [t[-1] + 0.01], sites, unlisted=[0] * (len(t) + 1)))
    assert out["garbage.rb:1"][0] == "falling"


def stacked_dump(tmp):
    """A gem line kept by two application lines, 9:1 (stack records),
    rising 400 KB/s over 4 s."""
    t = times(4)
    ys = [round(400_000 * x) for x in t]
    gem = "/gems/x/lib/x.rb:5"
    stacks = [(gem, [f"{gem} in keep", "app/a.rb:3 in up"], 9 * ys[-1] // 10),
              (gem, [f"{gem} in keep", "app/b.rb:7 in ping"], ys[-1] // 10)]
    return write_dump(tmp, t, {gem: ys}, unlisted=[0] * len(t), stacks=stacks)


def test_focused_rows_and_file_rows_carry_growth(tmp):
    """--focus names the gem line's bytes by the application lines that
    called it: each carries the gem line's growth in its share."""
    path = stacked_dump(tmp)
    out = growth(path, "--focus", "app/")
    assert out["app/a.rb:3"][0] == "rising" and 340_000 <= out["app/a.rb:3"][1] <= 380_000
    assert out["app/b.rb:7"][0] == "rising" and 38_000 <= out["app/b.rb:7"][1] <= 42_000
    out = growth(path, "--group", "file")
    assert out["/gems/x/lib/x.rb"][0] == "rising"


def test_html_table_has_a_growth_column(tmp):
    p = run([REPORT, "--format=html", stacked_dump(tmp)])
    assert p.returncode == 0, p.stderr
    assert '<th data-col="growth">' in p.stdout
    assert '<td class="growth rising" data-v="400000.0"' in p.stdout
    assert "+390.6 KiB/s rising</td>" in p.stdout


def test_net_change_below_zero_is_explained(tmp):
    t = times(4)
    path = write_dump(tmp, t, {"a.rb:1": [round(400_000 * x) for x in t]},
                      header={"net_change_bytes": -20_000_000, "unknown_frees": 900,
                              "unknown_freed_bytes": 21_600_000})
    p = run([REPORT, path])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if "net change -19.1 MiB" in l)
    assert lines[i + 1].startswith("  (below 0: blocks made before the window and freed during it")
    assert lines[i + 2].endswith("they rise while the process shrinks)")
    assert "rising" in p.stdout


MERGE = r"""
require "json"
require_relative "scripts/lib/mwrap_report"
dumps = ARGV.map { |f| MwrapReport.parse(File.read(f), f) }
m = MwrapReport.merge(dumps)
puts JSON.generate(m.series.to_h)
puts MwrapReport.json(m, m.sites)
"""


def test_a_clusters_merged_series_fills_then_sums(tmp):
    """Two processes: A lists the site throughout, B only from its third
    sample (its first two listed every site: it held 0 there); both ran
    --gc.  The merged series sums them sample by sample, their GC
    samples into one, last; the merged site is levelled."""
    t = times(4)
    a_ys = noisy([0 if x < 0.3 else 1_000_000 for x in t], 20_000, 1)
    b_ys = [None, None] + noisy([1_000_000] * (len(t) - 2), 20_000, 2)
    paths = []
    for name, ys in (("a", a_ys), ("b", b_ys)):
        d = tmp / name
        d.mkdir()
        paths.append(write_dump(d, t + [t[-1] + 0.02], {"x.rb:1": ys + [ys[-1]]},
                                unlisted=[0] * (len(t) + 1), gc=len(t)))
    p = run(["ruby", "-e", MERGE, *paths], cwd=ROOT)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    series = json.loads(out[0])
    assert series["gc_sample"] == len(t) and len(series["t"]) == len(t) + 1
    want = [a + (b or 0) for a, b in zip(a_ys, b_ys)] + [a_ys[-1] + b_ys[-1]]
    assert series["sites"]["x.rb:1"] == want
    site = next(json.loads(l) for l in out[1:] if json.loads(l)["type"] == "site")
    assert site["growth"] == "levelled"
