# SPDX-License-Identifier: MIT
"""mwrap-report on small hand-written dumps (tests/data), and on a dump
from a real attach."""
import json
import os

import pytest

from conftest import LEAK_RB, ROOT, attach, ptrace_allowed, run, start_leak

pytestmark = pytest.mark.fast  # make test-fast

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
DATA = os.path.join(ROOT, "tests", "data")
OLD, NEW = os.path.join(DATA, "old.json"), os.path.join(DATA, "new.json")


def report(*args):
    return run([REPORT, *args])


def rows(text):
    """The table rows: (live, share, location) per site."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 8 and (parts[0].isdigit() or parts[0] == "-"):
            out.append((parts[0], parts[1], parts[-1]))
    return out


def test_leak_view_ranks_by_live_bytes_with_shares_and_header():
    p = report(NEW)
    assert p.returncode == 0, p.stderr
    assert rows(p.stdout) == [
        ("12000000", "84.5%", "app/cache.rb:20"),
        ("2000000", "14.1%", "app/render.rb:15"),
        ("200000", "1.4%", "/lib/x86_64-linux-gnu/libz.so.1(deflateInit2_+0x1a2)[0x7f0000001234]"),
    ]
    head = p.stdout.splitlines()[:2]
    assert head[0] == "mwrap report: pid 4242, window 70.0 s, ages in gc_generations"
    assert head[1] == ("RSS 130.0 MiB at the dump | malloc in use 90.6 MiB, free inside malloc 33.4 MiB"
                       " | tracked live 13.5 MiB")
    assert "mean_lifespan" in p.stdout and " 0.5 " in p.stdout   # 29000/58000


@pytest.mark.parametrize("args, expect", [
    (["--top", "1"], ["app/cache.rb:20"]),
    (["--min", "1000000"], ["app/cache.rb:20", "app/render.rb:15"]),
    (["--sort", "total"], ["app/render.rb:15", "app/cache.rb:20", "/lib/x86_64-linux-gnu/libz.so.1"
                           "(deflateInit2_+0x1a2)[0x7f0000001234]"]),
    (["--sort", "allocations", "--top", "1"], ["app/render.rb:15"]),
    (["--grep", "libz|cache"], ["app/cache.rb:20", "/lib/x86_64-linux-gnu/libz.so.1"
                                "(deflateInit2_+0x1a2)[0x7f0000001234]"]),
])
def test_filters(args, expect):
    p = report(*args, NEW)
    assert p.returncode == 0, p.stderr
    assert [r[2] for r in rows(p.stdout)] == expect


def test_diff_growth_per_site():
    p = report("--diff", OLD, NEW)
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.strip().startswith(("+", "-"))]
    assert lines[0].split()[:2] == ["+10000000", "+10000000"] and "app/cache.rb:20" in lines[0]
    assert lines[1].split()[0] == "+1000000" and "app/render.rb:15" in lines[1]
    assert lines[2].split()[0] == "+200000" and lines[2].endswith("(new)")
    assert lines[3].split()[0] == "-5000" and lines[3].endswith("app/old.rb:3 (gone)")
    assert "live growth +11195000 bytes" in p.stdout


def test_diff_json():
    p = report("--diff", "--format", "json", OLD, NEW)
    growth = [json.loads(l) for l in p.stdout.splitlines()]
    assert growth[0]["location"] == "app/cache.rb:20" and growth[0]["live"] == 10_000_000


def test_json_output_keeps_the_schema():
    p = report("--format", "json", "--top", "2", NEW)
    objs = [json.loads(l) for l in p.stdout.splitlines()]
    assert objs[0]["type"] == "header" and objs[0]["pid"] == 4242
    assert [o["location"] for o in objs[1:]] == ["app/cache.rb:20", "app/render.rb:15"]
    assert objs[1]["live_bytes"] == 12_000_000


def test_mwrap_three_column_dump():
    p = report(os.path.join(DATA, "mwrap3.txt"))
    assert p.returncode == 0, p.stderr
    assert "totals stand in for live bytes" in p.stdout
    assert [r[2] for r in rows(p.stdout)] == ["leak.rb:5", "-e:1", "-e:2"]


@pytest.mark.parametrize("args, code, text", [
    ([os.path.join(DATA, "garbage.txt")], 3, "not a dump line"),
    (["/nonexistent.json"], 3, "cannot read"),
    (["--sort", "size", NEW], 2, "--sort must be one of"),
    (["--diff", NEW], 2, "--diff wants two dumps"),
    (["--grep", "(", NEW], 2, "bad --grep"),
    ([], 2, "one dump"),
])
def test_bad_input(args, code, text):
    p = report(*args)
    assert p.returncode == code and text in p.stderr, p.stderr
    assert " @ " not in p.stderr    # Ruby's "@ rb_sysopen - path"


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_report_of_a_real_attach(spawn, tmp):
    t, line, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    first = tmp / "first.json"
    assert attach(["-p", str(t.pid), "--dump", "--format=json", "-o", str(first)]).returncode == 0
    t.send("leak 400 10000")
    t.expect("leaked")
    second = tmp / "second.json"
    assert attach(["-p", str(t.pid), "--dump", "--format=json", "-o", str(second)]).returncode == 0
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    p = report("--top", "1", str(second))
    assert rows(p.stdout)[0][2] == f"{LEAK_RB}:{line}"
    assert "malloc in use" in p.stdout
    p = report("--diff", "--top", "1", str(first), str(second))
    top = [l for l in p.stdout.splitlines() if l.strip().startswith("+")][0]
    assert f"{LEAK_RB}:{line}" in top and int(top.split()[0]) >= 400 * 10000
    assert t.finish()[0] == 0


SCANNED = os.path.join(DATA, "scanned.json")


def test_scan_and_object_view_in_the_leak_view():
    """A sampled dump with a pointer scan and an object view: the
    unreferenced share of the scanned (sampled) blocks is scaled to each
    site's live estimate; Ruby's memory is shown beside RSS and malloc."""
    p = report(SCANNED)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    native = next(l for l in lines if l.endswith("app/native.rb:9")).split()
    cache = next(l for l in lines if l.endswith("app/cache.rb:3")).split()
    # 15,000 of 20,000 scanned bytes unreferenced -> 75% of 2,000,000
    assert native[3] == "1500000" and cache[3] == "0"
    assert any(l.startswith("pointer scan: 1.4 MiB of 2.9 MiB live nothing points to")
               for l in lines)
    side = {l[:42].strip(): l[42:].strip() for l in lines if l.startswith("  ")}
    assert side["RSS (before the dump)"] == "130.0 MiB"
    assert side["Ruby objects, memsize of all"] == "100.0 MiB"
    assert side["instruction sequences (4200 iseqs)"] == "85.0 MiB"
    assert "objects: 49000 live of 50000 slots; GC runs 12 (major 3); heap pages 120" in p.stdout


def test_json_keeps_scan_and_objects_records():
    p = report(SCANNED, "--format=json")
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    assert [r["type"] for r in recs] == ["header", "scan", "objects", "site", "site"]
    assert recs[3]["unreferenced_bytes"] == 15000
    assert recs[2]["iseq_memsize"] == 89128960


def test_merge_sums_sites_across_processes():
    import subprocess
    code = ('require_relative "scripts/lib/mwrap_report"; '
            'a = MwrapReport.parse(File.read(ARGV[0])); b = MwrapReport.parse(File.read(ARGV[1])); '
            'm = MwrapReport.merge([a, b]); '
            'puts m.header["pid"], m.header["rss_bytes"]; '
            'm.sites.sort_by { |s| s[:location] }.each { |s| puts [s[:location], s[:live], s[:allocations], s[:unref].inspect].join(" ") }')
    out = subprocess.run(["ruby", "-e", code, SCANNED, NEW], cwd=ROOT, capture_output=True,
                         text=True, timeout=30, check=True).stdout.splitlines()
    assert out[0] == "77,4242"
    assert int(out[1]) == 136314880 + json.loads(open(NEW).readline())["rss_bytes"]
    by = {l.split()[0]: l.split()[1:] for l in out[2:]}
    assert by["app/native.rb:9"] == ["2000000", "200", "15000"]
    assert by["app/cache.rb:20"][0] == "12000000" and by["app/cache.rb:20"][2] == "nil"


def test_unnamed_native_sites_say_how_to_get_names(tmp):
    """A native site named by its offset alone (no symbol there) comes
    with where names come from: the binary's debug symbols."""
    dump = tmp / "native.json"
    dump.write_text(
        json.dumps({"type": "header", "pid": 7, "age_unit": "ns"}) + "\n" +
        json.dumps({"type": "site", "location":
                    "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1(+0xd8484)[0x7f0000d8484]",
                    "total_bytes": 4096, "allocations": 1, "frees": 0, "freed_bytes": 0,
                    "live_bytes": 4096, "live_count": 1}) + "\n")
    p = report(str(dump))
    assert p.returncode == 0, p.stderr
    hint = [l for l in p.stdout.splitlines() if l.startswith("native sites without function names")]
    assert hint and "libruby-3.1.so.3.1" in hint[0] and "-dbgsym" in hint[0], p.stdout
    named = tmp / "named.json"
    named.write_text(dump.read_text().replace("(+0xd8484)", "(rb_str_new+0x14)"))
    assert "without function names" not in report(str(named)).stdout


def test_group_by_gem_names_the_dependency(tmp):
    """--group gem: a gem's lines (its gem directory, Debian's
    vendor_ruby), its C extension, Ruby's stdlib and VM, a native
    library, and the application's lines, each summed into its own row."""
    sites = [("/usr/share/rubygems-integration/all/gems/activesupport-6.1.7/lib/a.rb:3", 3000),
             ("/usr/share/rubygems-integration/all/gems/activesupport-6.1.7/lib/b.rb:9", 1000),
             ("/usr/lib/ruby/vendor_ruby/sqlite3/statement.rb:108", 2000),
             ("/var/lib/gems/3.1.0/gems/nokogiri-1.15.0-x86_64-linux/lib/nokogiri/3.1/"
              "nokogiri.so(xmlNew+0x1)[0x2]", 5000),
             ("/usr/lib/ruby/3.1.0/json/common.rb:312", 7000),
             ("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1(+0xd8484)[0x7f0000d8484]", 900),
             ("/usr/lib/x86_64-linux-gnu/libc.so.6(strdup+0x1a)[0x7f]", 800),
             ("/srv/app/app/models/order.rb:5", 600)]
    dump = tmp / "gems.json"
    dump.write_text(json.dumps({"type": "header", "pid": 7, "age_unit": "ns"}) + "\n" + "".join(
        json.dumps({"type": "site", "location": loc, "total_bytes": b, "allocations": 1,
                    "frees": 0, "freed_bytes": 0, "live_bytes": b, "live_count": 1}) + "\n"
        for loc, b in sites))
    p = report("--group", "gem", str(dump))
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.strip() and l.split()[0].isdigit()]
    by = {l.split("  ")[-1].strip(): int(l.split()[0]) for l in lines}
    assert by == {"ruby stdlib json": 7000, "gem nokogiri": 5000, "gem activesupport": 4000,
                  "gem sqlite3": 2000, "ruby VM (libruby-3.1)": 900, "native libc": 800,
                  "application": 600}, by
