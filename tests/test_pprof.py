# SPDX-License-Identifier: MIT
"""pprof output, decoded back with protoc against profile.proto."""
import gzip
import json
import os
import shutil
import subprocess

import pytest

from conftest import LEAK_RB, ROOT, attach, ptrace_allowed, run, start_leak

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
DATA = os.path.join(ROOT, "tests", "data")
PROTOC = shutil.which("protoc")
pytestmark = [pytest.mark.fast, pytest.mark.skipif(PROTOC is None, reason="protoc not installed")]


def parse_text(text):
    """protoc's text format -> nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        elif line:
            key, val = line.split(":", 1)
            val = val.strip()
            val = val[1:-1].encode().decode("unicode_escape") if val.startswith('"') \
                else val == "true" if val in ("true", "false") else int(val)
            cur.setdefault(key, []).append(val)
    return root


def decode(path):
    raw = gzip.open(path).read()
    p = subprocess.run([PROTOC, "--decode=perftools.profiles.Profile", "-I", DATA,
                        os.path.join(DATA, "profile.proto")], input=raw,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    prof = parse_text(p.stdout.decode())
    strings = prof["string_table"]
    assert strings[0] == ""
    return prof, strings


def by_location(prof, strings):
    """{site name: (values, location)}: a Ruby site's name rebuilt from its
    function's file and its line, a native one's from its function."""
    funcs = {f["id"][0]: f for f in prof["function"]}
    out = {}
    locs = {l["id"][0]: l for l in prof["location"]}
    for s in prof["sample"]:
        loc = locs[s["location_id"][0]]
        fn = funcs[loc["line"][0]["function_id"][0]]
        line = loc["line"][0].get("line", [0])[0]
        name = f'{strings[fn["filename"][0]]}:{line}' if line else strings[fn["name"][0]]
        out[name] = (s["value"], loc)
    return out


def test_profile_from_a_dump(tmp):
    out = tmp / "p.pb.gz"
    p = run([REPORT, "--format", "pprof", "-o", str(out), os.path.join(DATA, "new.json")])
    assert p.returncode == 0, p.stderr
    prof, strings = decode(out)
    types = [(strings[t["type"][0]], strings[t["unit"][0]]) for t in prof["sample_type"]]
    assert types == [("alloc_objects", "count"), ("alloc_space", "bytes"),
                     ("inuse_objects", "count"), ("inuse_space", "bytes")]
    assert strings[prof["default_sample_type"][0]] == "inuse_space"
    sites = by_location(prof, strings)
    # a function per Ruby line, named after it (pprof -top ranks functions)
    funcs = {strings[f["name"][0]]: f for f in prof["function"]}
    assert strings[funcs["app/cache.rb:20"]["filename"][0]] == "app/cache.rb"
    assert funcs["app/cache.rb:20"]["start_line"] == [20]
    assert sites["app/cache.rb:20"][0] == [1200, 12000000, 1200, 12000000]
    assert sites["app/render.rb:15"][0] == [60000, 60000000, 2000, 2000000]
    values, loc = sites["deflateInit2_"]
    assert values == [4, 400000, 2, 200000]
    assert loc["address"][0] == 0x7f0000001234
    mappings = {strings[m["filename"][0]]: m for m in prof["mapping"]}
    assert sorted(mappings) == ["/lib/x86_64-linux-gnu/libz.so.1", "[ruby]"]
    assert mappings["/lib/x86_64-linux-gnu/libz.so.1"]["id"] == loc["mapping_id"]
    assert mappings["/lib/x86_64-linux-gnu/libz.so.1"]["has_functions"] == [True]   # dladdr named it
    assert prof["duration_nanos"][0] == 70 * 10**9


def test_mappings_from_the_dumps_records(tmp):
    """A dump's mapping records give each binary's start, limit, offset
    and build ID; a binary whose every site is named has_functions, one
    with an unnamed site not.  mwrap-report --format json keeps them."""
    lib = "/usr/lib/x86_64-linux-gnu/libz.so.1"
    rows = [{"type": "header", "version": "0.1", "pid": 1, "seconds": 1},
            {"type": "site", "location": f"/app/prog(cache_grow+0x9)[0x{0x555500001349:x}]",
             "total_bytes": 300, "allocations": 3},
            {"type": "site", "location": f"/app/prog(+0x1339)[0x{0x555500001339:x}]",
             "total_bytes": 100, "allocations": 1},
            {"type": "site", "location": f"{lib}(deflateInit2_+0x1a2)[0x7f0000001234]",
             "total_bytes": 400, "allocations": 4},
            {"type": "mapping", "path": "/app/prog", "start": 0x555500000000,
             "limit": 0x555500006000, "offset": 0, "build_id": "ab" * 20, "symbols": "symtab"},
            {"type": "mapping", "path": lib, "start": 0x7f0000000000,
             "limit": 0x7f0000020000, "offset": 0x1000, "build_id": "cd" * 20,
             "symbols": "dynsym"}]
    dump = tmp / "d.json"
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / "p.pb.gz"
    p = run([REPORT, "--format", "pprof", "-o", str(out), str(dump)])
    assert p.returncode == 0, p.stderr
    prof, strings = decode(out)
    maps = {strings[m["filename"][0]]: m for m in prof["mapping"]}
    prog, z = maps["/app/prog"], maps[lib]
    assert prog["memory_start"] == [0x555500000000] and prog["memory_limit"] == [0x555500006000]
    assert strings[prog["build_id"][0]] == "ab" * 20
    assert "has_functions" not in prog          # its +0x1339 site is unnamed
    assert z["memory_start"] == [0x7f0000000000] and z["file_offset"] == [0x1000]
    assert strings[z["build_id"][0]] == "cd" * 20 and z["has_functions"] == [True]
    sites = by_location(prof, strings)
    assert sites["cache_grow"][1]["mapping_id"] == prog["id"]
    p = run([REPORT, "--format", "json", str(dump)])
    assert p.returncode == 0, p.stderr
    kept = [json.loads(l) for l in p.stdout.splitlines() if '"mapping"' in l]
    assert kept == rows[4:]


def test_pprof_refuses_a_terminal_and_diff():
    p = run([REPORT, "--diff", "--format", "pprof", os.path.join(DATA, "old.json"),
             os.path.join(DATA, "new.json")])
    assert p.returncode == 2 and "--diff prints text or json" in p.stderr


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_profile_straight_from_an_attach(spawn, tmp):
    t, line, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("leak 200 10000")
    t.expect("leaked")
    out = tmp / "attach.pb.gz"
    p = attach(["-p", str(t.pid), "--dump", "--format=pprof", "-o", str(out)])
    assert p.returncode == 0, p.stderr
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    prof, strings = decode(out)
    sites = by_location(prof, strings)
    values, _ = sites[f"{LEAK_RB}:{line}"]
    assert values[0] >= 200 and values[3] >= 200 * 10000
    top = max(sites.items(), key=lambda kv: kv[1][0][3])
    assert top[0] == f"{LEAK_RB}:{line}"
    assert t.finish()[0] == 0
