# SPDX-License-Identifier: MIT
"""mwrap-attach --gc: a full GC.start at a Ruby safe
point just before the final dump, so that a short window's garbage (Ruby
strings allocated and dropped, not yet collected) no longer outranks a
real leak; the report says the GC ran and how long it took.  A process
without Ruby gets a warning and its report."""
import json

import pytest

from conftest import (ATTACH, LEAK_RB, attach, during_window, parse_json_dump, site_rows,
                      ptrace_allowed, start_ready)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=f"ptrace not permitted: {ptrace_allowed()}")

SIZE = 16384            # malloc'd (past Ruby's embedded strings), < mmap threshold
GARBAGE_N, LEAK_N = 200, 50     # 3.2 MiB of garbage, 800 KiB of leak:
                                # under malloc_limit (16 MiB), so no GC of
                                # Ruby's own comes in the window


# Ruby 3.3 grows the array that keeps the leak on the leak's line
ARRAY_SLACK = 4096


def window(spawn, extra):
    """A 3 s window over leak.rb in which it makes GARBAGE_N strings of
    garbage and keeps LEAK_N strings: (header, sites, stderr, the two
    locations)."""
    t, f = start_ready(spawn, ["ruby", LEAK_RB])
    garbage = f"{LEAK_RB}:{f['garbage_line']}"
    leak = f"{LEAK_RB}:{f['leak_line']}"

    def make_garbage_and_leak():
        t.send(f"garbage {GARBAGE_N} {SIZE}")
        t.expect("garbage")
        t.send(f"leak {LEAK_N} {SIZE}")
        t.expect("leaked")
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", "3", "--format", "json", *extra],
                                 t.pid, make_garbage_and_leak)
    assert rc == 0, err
    header, sites = parse_json_dump(out)
    return header, sites, err, garbage, leak


def ranked(sites):
    return sorted(sites.values(), key=lambda s: -s["live_bytes"])


def test_without_gc_the_garbage_outranks_the_leak(spawn):
    header, sites, _, garbage, leak = window(spawn, [])
    assert "gc" not in header
    assert ranked(sites)[0]["location"] == garbage
    # every string still there (none collected), within 2%
    assert sites[garbage]["live_bytes"] >= 0.98 * GARBAGE_N * SIZE
    assert LEAK_N * SIZE <= sites[leak]["live_bytes"] <= LEAK_N * SIZE + ARRAY_SLACK


def test_gc_moves_the_garbage_out_of_the_top(spawn):
    header, sites, err, garbage, leak = window(spawn, ["--gc"])
    assert header["gc"] == "ran", err
    assert 0 <= header["gc_ms"] < 10000
    assert header["gc_live_after_bytes"] < header["gc_live_before_bytes"]
    assert ranked(sites)[0]["location"] == leak
    # the strings were made in the window: all allocated, all freed but at
    # most 2 (a conservative GC may still see one on the machine stack)
    g = sites.get(garbage, {"live_bytes": 0, "allocations": 0})
    if garbage in sites:
        assert g["total_bytes"] >= GARBAGE_N * SIZE
    assert g["live_bytes"] <= 2 * SIZE, g
    # the leak keeps every byte
    assert LEAK_N * SIZE <= sites[leak]["live_bytes"] <= LEAK_N * SIZE + ARRAY_SLACK
    assert "--gc" not in err     # no warning


def test_gc_text_report_says_it_ran_and_how_long(spawn):
    t, f = start_ready(spawn, ["ruby", LEAK_RB])
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    try:
        t.send(f"garbage {GARBAGE_N} {SIZE}")
        t.expect("garbage")
        p = attach(["-p", str(t.pid), "--dump"])
        assert p.returncode == 0, p.stderr
        assert f"{LEAK_RB}:{f['garbage_line']}" in p.stdout
        assert "full GC" not in p.stdout
        p = attach(["-p", str(t.pid), "--dump", "--gc"])
        assert p.returncode == 0, p.stderr
        line = next(l for l in p.stdout.splitlines() if l.startswith("full GC"))
        assert "(GC.start) run at a Ruby safe point before this dump, in " in line
        assert " ms: tracked live " in line
        # the site stays (it allocated), its live bytes gone but for at
        # most 2 strings (see above)
        row = next(l for l in site_rows(p.stdout.splitlines())
                   if l.endswith(f"{LEAK_RB}:{f['garbage_line']}"))
        assert int(row.split()[0]) <= 2 * SIZE, row
    finally:
        attach(["-p", str(t.pid), "--detach"])


def test_gc_on_a_process_without_ruby_warns_and_still_reports(spawn):
    t = spawn(["sleep", "60"])
    p = attach(["-p", str(t.pid), "-d", "1", "--gc"])
    assert p.returncode == 0, p.stderr
    assert "mwrap-attach: --gc: no GC before the dump: not a Ruby process" in p.stderr
    assert "--gc applies to Ruby processes: the report comes without it" in p.stderr
    assert "no GC before this dump (--gc: not a Ruby process)" in p.stdout
    assert "ranked by live bytes" in p.stdout
    p = attach(["-p", str(t.pid), "-d", "1", "--gc", "--format", "json"])
    assert p.returncode == 0, p.stderr
    header = json.loads(p.stdout.splitlines()[0])
    assert header["gc"] == "not run" and header["gc_error"] == "not a Ruby process"
