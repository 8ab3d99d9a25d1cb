# SPDX-License-Identifier: MIT
"""Blocks that existed before the attach: a process
with a million blocks live before the attach that frees most of them
during the window shrank, though every block the window made is new.
The frees of blocks the table never saw are counted with the
allocator's usable size, and the net change is shown beside the tracked
live bytes: stats line, dump headers (text and JSON), report header."""
import json
import os

import pytest

from conftest import MWRAP, ROOT, TARGETS, attach, needs_ptrace, parse_json_dump, run, start_ready

PRELIVE = os.path.join(TARGETS, "prelive")
REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = {
    None: None,
    "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
    "tcmalloc": os.path.join(LIBDIR, "libtcmalloc_minimal.so.4"),
}
BLOCKS = 1_000_000
SIZE = 64	# every allocator's usable size for it is 64 to 80 bytes
NEW, NEW_SIZE = 10_000, 100	# the window's own blocks: 1,000,000 bytes


def ok(args):
    p = attach(args)
    assert p.returncode == 0, p.stderr
    return p.stdout


def shrink_during_window(spawn, allocator=None):
    """prelive with BLOCKS blocks, attached; the window adds NEW blocks
    and frees 90% of the old ones.  Returns (target, blocks freed)."""
    env = {}
    if allocator:
        if not os.path.exists(ALLOCATORS[allocator]):
            pytest.skip(f"{ALLOCATORS[allocator]} not installed")
        env["LD_PRELOAD"] = ALLOCATORS[allocator]
    t, _ = start_ready(spawn, [PRELIVE, str(BLOCKS), str(SIZE)], env=env)
    ok(["-p", str(t.pid), "--keep"])
    t.send(f"alloc {NEW} {NEW_SIZE}")
    t.expect(f"allocated {NEW}")
    t.send("free 90")
    freed = int(t.expect("freed").split()[1])
    # the first 90% of the blocks: all from before the window
    assert freed == (BLOCKS + NEW) * 90 // 100
    return t, freed


def finish(t):
    assert ok(["-p", str(t.pid), "--detach"]).startswith("ok detach")
    rc, rest, _ = t.finish(timeout=60)
    assert rc == 0 and rest == ["bye OK"]


@needs_ptrace
@pytest.mark.parametrize("allocator", [None, "jemalloc", "tcmalloc"])
def test_frees_of_earlier_blocks_make_the_net_change_negative(spawn, allocator):
    t, freed = shrink_during_window(spawn, allocator)
    header, sites = parse_json_dump(ok(["-p", str(t.pid), "--dump", "--format=json"]))
    # the window's own blocks are its tracked live bytes
    assert header["tracked_live_bytes"] == NEW * NEW_SIZE
    assert header["unknown_frees"] == freed
    # usable sizes: at least what was asked for, at most a size class up
    assert freed * SIZE <= header["unknown_freed_bytes"] <= freed * (SIZE + 16)
    assert header["net_change_bytes"] == NEW * NEW_SIZE - header["unknown_freed_bytes"]
    assert header["net_change_bytes"] < -50_000_000

    stats = ok(["-p", str(t.pid), "--stats"])
    fields = dict(w.split("=", 1) for w in stats.split() if "=" in w)
    assert int(fields["unknown_frees"]) == freed
    assert int(fields["unknown_freed_bytes"]) == header["unknown_freed_bytes"]
    assert int(fields["net_change_bytes"]) == header["net_change_bytes"]

    text = ok(["-p", str(t.pid), "--dump"])
    net = next(l for l in text.splitlines() if l.startswith("net change"))
    assert net.startswith("net change -") and f"less {freed} blocks" in net, text
    finish(t)


def test_text_dump_header_in_preload_mode(tmp):
    """mwrap's three-column dump carries the figures in its header line:
    preloaded, every block is tracked from the start, so none is
    unknown and the net change is the tracked live bytes."""
    dump = tmp / "prelive.dump"
    p = run([MWRAP, PRELIVE, "1000", "64"], env={"MWRAP": f"dump_path:{dump}"},
            input="free 90\n")
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "bye OK", p.stderr
    first = dump.read_text().splitlines()[0]
    assert first.startswith("# mwrap-attach")
    fields = dict(w.split("=", 1) for w in first.split() if "=" in w)
    assert fields["unknown_frees"] == "0" and fields["unknown_freed_bytes"] == "0"
    assert fields["net_change_bytes"] == fields["tracked_live_bytes"]


def test_report_reads_a_negative_net_change_from_a_text_header(tmp):
    dump = tmp / "three.txt"
    dump.write_text("# mwrap-attach 0.1 pid=7 age_unit=ns sample_bytes=0 allocator=glibc "
                    "tracked_live_bytes=1000 unknown_frees=10 unknown_freed_bytes=3048 "
                    "net_change_bytes=-2048 columns=total_bytes,call_count,location\n"
                    "            1000            1 a.rb:1\n")
    p = run([REPORT, str(dump)])
    assert p.returncode == 0, p.stderr
    assert ("net change -2.0 KiB: tracked live 1000 B, less 10 blocks from "
            "before the window freed (3.0 KiB)") in p.stdout


def report(tmp, header):
    dump = tmp / "hand.json"
    dump.write_text(json.dumps(dict(type="header", **header)) + "\n")
    p = run([REPORT, str(dump)])
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_report_header_from_a_hand_written_dump(tmp):
    out = report(tmp, {"pid": 7, "seconds": 60, "rss_bytes": 80 << 20,
                  "tracked_live_bytes": 1 << 20, "sample_bytes": 0,
                  "unknown_frees": 900000, "unknown_freed_bytes": 64800000,
                  "net_change_bytes": (1 << 20) - 64800000})
    assert ("net change -60.8 MiB: tracked live 1.0 MiB, less 900000 blocks "
            "from before the window freed (61.8 MiB)") in out
    grew = report(tmp, {"pid": 7, "tracked_live_bytes": 5000, "sample_bytes": 0,
                   "unknown_frees": 1, "unknown_freed_bytes": 1000,
                   "net_change_bytes": 4000})
    assert "net change +3.9 KiB" in grew
    sampled = report(tmp, {"pid": 7, "tracked_live_bytes": 5000,
                      "sample_bytes": 65536, "unknown_frees": 1,
                      "unknown_freed_bytes": 1000, "net_change_bytes": 4000})
    assert "net change unknown under sampling" in sampled
    # dumps without the figures (older ones): no line
    assert "net change" not in report(tmp, {"pid": 7, "tracked_live_bytes": 5})
