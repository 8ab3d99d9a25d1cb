# SPDX-License-Identifier: MIT
"""Live views on a real attach: the Ruby object view (taken by
a Ruby thread at a safe point, no prior require), ObjectSpace.dump_all,
and the pointer scan's referenced/unreferenced split."""
import json
import os

import pytest

from conftest import (ROOT, attach, during_window, parse_json_dump, ptrace_allowed, ruby_lacks,
                      site_value, start_ready, ATTACH)

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason=f"ptrace not permitted: {ptrace_allowed()}")

SCAN_RB = os.path.join(ROOT, "tests", "targets", "scan_leak.rb")


def start(spawn):
    """tests/targets/scan_leak.rb, which makes its blocks with Fiddle
    (skips where this ruby has none: 4.x built without bundled gems)."""
    if ruby_lacks("fiddle"):
        pytest.skip(ruby_lacks("fiddle"))
    t, fields = start_ready(spawn, ["ruby", SCAN_RB])
    return t, f"{SCAN_RB}:{fields['keep_line']}", f"{SCAN_RB}:{fields['leak_line']}"


def records(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def test_scan_splits_kept_strings_from_dropped_blocks(spawn):
    t, keep, leak = start(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("go 2000")
    t.expect("done")
    p = attach(["-p", str(t.pid), "--dump", "--scan", "--format=json"])
    assert p.returncode == 0, p.stderr
    recs = records(p.stdout)
    scan = next(r for r in recs if r["type"] == "scan")
    assert scan["complete"] and scan["blocks"] >= 4000
    assert scan["memory_bytes"] > 0
    _, sites = parse_json_dump(p.stdout)
    # strings held by KEPT: every buffer is pointed to by its RString
    assert sites[keep]["live_count"] >= 2000
    assert sites[keep]["unreferenced_count"] <= 20
    # Fiddle.malloc'd and dropped: nothing points to them (Ruby kept
    # only tagged Integers); a few may linger in a register or stack slot
    assert sites[leak]["unreferenced_count"] >= 1980
    assert abs(sites[leak]["unreferenced_bytes"] - 8_000_000) <= 100_000
    # the text report shows the column and the summary line
    p = attach(["-p", str(t.pid), "--dump", "--scan"])
    assert "unreferenced" in p.stdout and "pointer scan:" in p.stdout
    assert site_value(p.stdout.splitlines(), leak, "unreferenced") >= 7_900_000
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 2000"]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))


def test_scan_leaves_the_process_no_bigger(spawn, tmp):
    """The scan reads only the pages the process has in its page tables:
    a private writable mapping of a 64 MiB file it never read stays
    unread (reading it would fault it in: RSS up 64 MiB, for good)."""
    t, keep, _ = start(spawn)
    path = os.path.join(tmp, "mapped")
    with open(path, "wb") as f:
        f.truncate(64 << 20)
    t.send(f"map {path}")
    t.expect("mapped")
    t.send("go 2000")
    t.expect("done")
    before = rss_bytes(t.pid)
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2", "--objects", "--scan",
                                  "--format=json"], t.pid, lambda: t.send("go 200"))
    assert rc == 0, err
    t.expect("done")
    scan = next(r for r in records(out) if r["type"] == "scan")
    assert scan["complete"] and scan["blocks"] >= 400
    assert scan["not_resident_bytes"] >= 64 << 20, scan
    # the window's own cost: the library, its tables, 400 blocks of
    # 4,000 bytes made during it; nothing of the mapping
    assert rss_bytes(t.pid) - before <= 16 << 20, (before, rss_bytes(t.pid))
    _, sites = parse_json_dump(out)
    assert sites[keep]["unreferenced_count"] <= 20
    t.send("exit")
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 2200"]


def test_object_view_of_an_idle_process_without_require(spawn, tmp):
    """The target sits in $stdin.gets (no thread holds the GVL): the main
    thread takes the job and is woken with Ruby's own SIGVTALRM."""
    t, keep, _ = start(spawn)
    heap = os.path.join(tmp, "heap.json")
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("go 1000")
    t.expect("done")
    p = attach(["-p", str(t.pid), "--dump", "--objects", "--dump-all", heap,
                "--format=json"], timeout=120)
    assert p.returncode == 0, p.stderr
    obj = next((r for r in records(p.stdout) if r["type"] == "objects"), None)
    assert obj is not None, p.stderr
    assert obj["errors"] == []
    co, mem = obj["count_objects"], obj["memsize_by_type"]
    # our heap walk agrees with Ruby's own count of internal objects
    # (taken a moment apart: within 2%; wrong type bits would be far off)
    assert abs(sum(obj["imemo_count"].values()) - co["T_IMEMO"]) <= co["T_IMEMO"] * 0.02
    assert obj["iseq_count"] == obj["imemo_count"]["imemo_iseq"] > 100
    assert obj["iseq_memsize"] > 100_000
    # 1000 kept strings of 4,000 bytes are in T_STRING's memsize
    assert mem["T_STRING"] >= 4_000_000
    assert mem["TOTAL"] == sum(v for k, v in mem.items() if k != "TOTAL")
    assert obj["gc_stat"]["count"] >= 1
    # both measured; no order between them: malloc'd memory never touched
    # is not resident (on Ruby 3.2.8 built from source: 26.8 MB resident,
    # 45.8 MB in use)
    assert obj["rss_bytes"] > 0 and obj["malloc_in_use_bytes"] > 0
    assert obj["tracked_live_bytes"] >= 8_000_000
    # dump_all ran in a short Ruby thread: one JSON object per line
    with open(heap) as f:
        first = [json.loads(next(f)) for _ in range(3)]
    assert first[0]["type"] == "ROOT"
    assert os.path.getsize(heap) > 1_000_000
    # the text report puts them side by side
    p = attach(["-p", str(t.pid), "--dump", "--objects"])
    assert "memory side by side" in p.stdout
    assert "instruction sequences" in p.stdout
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    # the target saw nothing: objspace was never required in it
    t.send("exit")
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 1000"]


def test_object_view_refused_for_a_c_process(spawn):
    from conftest import TARGETS
    t = spawn([os.path.join(TARGETS, "blocker"), "read"])
    t.expect("ready")
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    p = attach(["-p", str(t.pid), "--dump", "--objects"])
    assert p.returncode == 0
    assert "no object view: not a Ruby process" in p.stderr
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0


def test_a_long_scan_reports_progress(spawn):
    t, _, _ = start(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("ballast 4000")     # 4 GB to read: well over the 0.5 s interval
    t.expect("done", timeout=120)
    p = attach(["-p", str(t.pid), "--dump", "--scan", "--format=json"], timeout=120)
    assert p.returncode == 0, p.stderr
    progress = [l for l in p.stderr.splitlines() if l.startswith("mwrap-attach: scan: ")]
    assert progress, p.stderr
    done, total = progress[-1].split()[2], progress[-1].split()[4]
    # the ballast alone is 4000 strings of 1,000,001 bytes: 3815 MiB
    assert 0 < int(done) <= int(total) and int(total) >= 3815   # MiB
    assert '"complete":true' in p.stdout
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
