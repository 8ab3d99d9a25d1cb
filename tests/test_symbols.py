# SPDX-License-Identifier: MIT
"""Native sites named by their function, on
tests/targets/statics: a static function (in .symtab only) is named in
every format, its stripped copy keeps "binary(+0xOFF)", an exported
function is named as before, and a return address just past the end of a
function's symbol is not given that function's name.  The dump's mapping
records carry each object's extent and build ID into pprof."""
import json
import os
import re
import shutil
import struct

import pytest

from conftest import (MWRAP, ROOT, TARGETS, attach, during_window,
                      parse_dump, parse_json_dump, ptrace_allowed, run)

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
ATTACH = os.path.join(ROOT, "scripts", "mwrap-attach")
STATICS = os.path.join(TARGETS, "statics")
STRIPPED = os.path.join(TARGETS, "statics-stripped")
GO = shutil.which("go")

NATIVE = re.compile(r"\A(.*)\((.*)\+0x([0-9a-f]+)\)\[0x([0-9a-f]+)\]\Z")


def build_id(path):
    """The NT_GNU_BUILD_ID of an ELF64 file, in hex (its section notes)."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3c)
    for i in range(shnum):
        typ, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        off, size = struct.unpack_from("<QQ", data, shoff + i * 64 + 24)
        p = off
        while typ == 7 and p + 12 <= off + size:     # SHT_NOTE
            namesz, descsz, ntype = struct.unpack_from("<III", data, p)
            name = data[p + 12:p + 12 + namesz]
            desc = p + 12 + (namesz + 3) // 4 * 4
            if ntype == 3 and name == b"GNU\0":
                return data[desc:desc + descsz].hex()
            p = desc + (descsz + 3) // 4 * 4
    return None


def symbol(path, name):
    """(value, size) of NAME in the .symtab of PATH, from nm."""
    p = run(["nm", "-S", path])
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            return int(f[0], 16), int(f[1], 16)
    raise AssertionError(f"{name} not in {path}")


def preloaded(tmp, target, fmt="json"):
    """Runs TARGET under scripts/mwrap (one "alloc"), dumping at exit in
    FMT: the dump's text."""
    out = tmp / f"{os.path.basename(target)}.{fmt}"
    p = run([MWRAP, target], env={"MWRAP": f"dump_path:{out},dump_format:{fmt}"},
            input="alloc\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ready\nallocated 600\n"
    return out.read_text()


def sites_by_figures(sites):
    """The target's three sites, told by (allocations, total bytes)."""
    want = {"cache_grow": (300, 300000), "exported_grow": (200, 400000),
            "past_end": (100, 300000)}
    found = {}
    for loc, s in sites.items():
        for key, (calls, total) in want.items():
            if (s["allocations"], s["total_bytes"]) == (calls, total):
                found[key] = loc
    assert sorted(found) == sorted(want), sites.keys()
    return found


def test_preloaded_static_function_is_named_past_its_end_is_not(tmp):
    header, sites = parse_json_dump(preloaded(tmp, STATICS))
    loc = sites_by_figures(sites)
    path, fn, off, addr = NATIVE.match(loc["cache_grow"]).groups()
    assert os.path.realpath(path) == os.path.realpath(STATICS)
    assert fn == "cache_grow"
    start, size = symbol(STATICS, "cache_grow")
    assert 0 < int(off, 16) < size
    # an exported function as before
    assert NATIVE.match(loc["exported_grow"]).group(2) == "exported_grow"
    # sized_short's symbol ends at its call's return address: no name
    path, fn, off, addr = NATIVE.match(loc["past_end"]).groups()
    start, size = symbol(STATICS, "sized_short")
    assert fn == "" and int(off, 16) == start + size, loc["past_end"]
    # the mapping record of the program
    maps = [json.loads(l) for l in open(tmp / "statics.json")
            if '"type":"mapping"' in l]
    mine = [m for m in maps if os.path.realpath(m["path"]) == os.path.realpath(STATICS)]
    assert len(mine) == 1, maps
    m = mine[0]
    assert m["build_id"] == build_id(STATICS) and m["symbols"] == "symtab"
    assert m["start"] <= int(addr, 16) < m["limit"] and m["offset"] == 0


def test_text_dump_and_report_name_it(tmp):
    sites = parse_dump(preloaded(tmp, STATICS, "text"))
    assert [l for l in sites if "statics(cache_grow+0x" in l] and \
        sites[next(l for l in sites if "(cache_grow+0x" in l)] == (300000, 300)
    p = run([REPORT, str(tmp / "statics.text")])
    assert p.returncode == 0, p.stderr
    assert re.search(r"^.* 300000 +300 .* \S*statics\(cache_grow\+0x[0-9a-f]+\)\[0x",
                     p.stdout, re.M), p.stdout
    # the JSON report keeps the mapping records; --group=file puts the
    # program's three sites in one row
    json_dump = tmp / "d.json"
    json_dump.write_text(preloaded(tmp, STATICS))
    p = run([REPORT, "--format", "json", str(json_dump)])
    assert p.returncode == 0, p.stderr
    assert any(json.loads(l)["type"] == "mapping" for l in p.stdout.splitlines())
    p = run([REPORT, "--group=file", str(json_dump)])
    assert p.returncode == 0, p.stderr
    rows = [l for l in p.stdout.splitlines() if l.rstrip().endswith("/statics")]
    assert len(rows) == 1 and rows[0].split()[0] == "1000000", p.stdout


def test_stripped_copy_keeps_offsets(tmp):
    _, sites = parse_json_dump(preloaded(tmp, STRIPPED))
    loc = sites_by_figures(sites)
    start, _ = symbol(STATICS, "cache_grow")
    path, fn, off, _ = NATIVE.match(loc["cache_grow"]).groups()
    assert path.endswith("statics-stripped") and fn == ""
    assert start < int(off, 16) < start + 0x30
    assert NATIVE.match(loc["exported_grow"]).group(2) == "exported_grow"
    assert NATIVE.match(loc["past_end"]).group(2) == ""
    maps = [json.loads(l) for l in open(tmp / "statics-stripped.json")
            if '"type":"mapping"' in l]
    m = next(m for m in maps if m["path"].endswith("statics-stripped"))
    assert m["symbols"] == "dynsym" and m["build_id"] == build_id(STATICS)


@pytest.mark.skipif(GO is None, reason="go not installed (scripts/install-deps installs golang-go)")
def test_go_pprof_names_the_static_function(tmp):
    dump = tmp / "d.json"
    dump.write_text(preloaded(tmp, STATICS))
    prof = tmp / "p.pb.gz"
    p = run([REPORT, "--format", "pprof", "-o", str(prof), str(dump)])
    assert p.returncode == 0, p.stderr
    env = {"HOME": str(tmp), "PPROF_TMPDIR": str(tmp), "GOTOOLCHAIN": "local"}
    p = run([GO, "tool", "pprof", "-top", "-unit=B", "-nodefraction=0",
             "-nodecount=100", str(prof)], cwd=tmp, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = dict((name, int(flat)) for flat, name in re.findall(
        r"^\s*(\d+)B\s+\S+%\s+\S+%\s+\d+B\s+\S+%\s+(.+?)\s*$", p.stdout, re.M))
    start, size = symbol(STATICS, "sized_short")
    assert rows["cache_grow"] == 300000 and rows["exported_grow"] == 400000, p.stdout
    assert rows[f"statics+0x{start + size:x}"] == 300000, p.stdout
    p = run([GO, "tool", "pprof", "-raw", str(prof)], cwd=tmp, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    mapping = next(l for l in p.stdout.splitlines() if l.rstrip().endswith(
        build_id(STATICS)) or build_id(STATICS) in l)
    assert "/statics " in mapping, p.stdout


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_attached_window_names_the_static_function(spawn):
    t = spawn([STATICS])
    t.expect("ready")

    def load():
        t.send("alloc")
        t.expect("allocated")
    rc, out, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2"], t.pid, load)
    assert rc == 0, err
    assert re.search(r"^\s+300000 .*statics\(cache_grow\+0x[0-9a-f]+\)\[0x", out, re.M), out
    assert re.search(r"^\s+400000 .*statics\(exported_grow\+0x[0-9a-f]+\)\[0x", out, re.M), out
    assert not re.search(r"sized_short", out), out
    t.send("exit")
    assert t.finish()[0] == 0


def test_a_library_unloaded_is_not_named_after_its_successor(tmp):
    """dlclose, then another library at (usually) the same addresses: the
    next dump names the new one's function, never the cached old one."""
    alpha, beta = (os.path.join(TARGETS, f"libdl{n}.so") for n in ("alpha", "beta"))
    d1, d2 = tmp / "d1.json", tmp / "d2.json"
    script = (f"load {alpha}\nalloc 30 1111\ndump {d1}\nunload\n"
              f"load {beta}\nalloc 20 2222\ndump {d2}\n")
    p = run([MWRAP, os.path.join(TARGETS, "dlcycle")], env={"MWRAP": "dump_min:1000000000"},
            input=script)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok\n" * 7
    _, first = parse_json_dump(d1.read_text())
    _, second = parse_json_dump(d2.read_text())
    a = [l for l in first if "libdlalpha.so(alpha_grow+0x" in l]
    assert len(a) == 1 and first[a[0]]["total_bytes"] == 30 * 1111
    b = [l for l in second if "libdlbeta.so(beta_grow+0x" in l]
    assert len(b) == 1, second.keys()
    assert second[b[0]]["total_bytes"] in (20 * 2222, 30 * 1111 + 20 * 2222)
    assert not [l for l in second if "alpha" in l], second.keys()
    maps = [json.loads(l)["path"] for l in d2.read_text().splitlines() if '"mapping"' in l]
    assert beta in maps and alpha not in maps
