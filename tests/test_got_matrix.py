# SPDX-License-Identifier: MIT
"""The GOT patcher over plthook's build matrix.

tests/got_matrix/gotmain.c and its library gotlib.c are built (Makefile,
GOTM_VARIANTS) in all 16 combinations of PIE / non-PIE, no / partial
RELRO, lazy / immediate binding (RELRO + now = full RELRO), PLT calls /
-fno-plt (GOT calls).  Each variant is attached while it runs: the
allocations it makes afterwards, from the executable's sites and the
library's, must be counted exactly; its malloc-family GOT slots must point
at libmwrap while attached, keep their page protection, and hold exactly
their old values after the detach (an unresolved lazy stub stays one),
and the target must free everything and exit 0.  The same binaries run
preloaded too.

The target reports its own slots ("slots" command), so the test sees the
executable's and the library's GOT as the process does, not as the tracer
says it left them."""
import os

import pytest

from conftest import MWRAP, ROOT, attach, needs_ptrace, parse_json_dump, run

MATRIX = os.path.join(ROOT, "build", "got_matrix")
VARIANTS = [f"{pie}-{relro}-{bind}-{plt}"
            for pie in ("pie", "nopie")
            for relro in ("norelro", "relro")
            for bind in ("lazy", "now")
            for plt in ("plt", "noplt")]
FAMILY = ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc",
          "free")
# What one "round K all" makes per round at each site (gotmain.c):
# (allocations, bytes); realloc's site makes NULL->small, then small->big.
PER_ROUND = {
    "exe_malloc": (1, 1000), "exe_calloc": (1, 3000),
    "exe_realloc": (2, 500 + 5000), "exe_posix_memalign": (1, 7000),
    "exe_aligned_alloc": (1, 2560),
    "lib_malloc": (1, 1100), "lib_calloc": (1, 3300),
    "lib_realloc": (2, 600 + 6000), "lib_posix_memalign": (1, 7700),
    "lib_aligned_alloc": (1, 2816),
}
BLOCKS_PER_ROUND = 10
# Our sites' counts are exact: nothing but the target's own calls reaches
# them (the runtime's own allocations have other call sites).
TOLERANCE = 0


def binary(variant):
    path = os.path.join(MATRIX, variant, "gotmain")
    assert os.access(path, os.X_OK), f"{path} missing: run make build"
    return path


def flags(variant):
    return set(variant.split("-"))


def ask(t, command, answer, timeout=20):
    t.send(command)
    return t.expect(answer, timeout=timeout)


def slots(t):
    """{(obj, name, jump|glob): (class, value, perms)} from the target."""
    line = ask(t, "slots", "slots")
    found = {}
    for word in line.split()[1:]:
        key, val = word.split("=", 1)
        cls, value, perms = val.split(":")
        found[tuple(key.split(":"))] = (cls, value, perms)
    return found


def check_files(variant):
    """The binaries are what the variant says, seen in their headers:
    executable type, PT_GNU_RELRO, BIND_NOW."""
    f = flags(variant)
    for path in (binary(variant),
                 os.path.join(MATRIX, variant, "libgotlib.so")):
        p = run(["readelf", "-hldW", path])
        assert p.returncode == 0, p.stderr
        out = p.stdout
        if path.endswith("gotmain"):
            want = "EXEC" if "nopie" in f else "DYN"
            assert f"Type:                              {want}" in out, path
        assert ("GNU_RELRO" in out) == ("relro" in f), path
        assert ("BIND_NOW" in out or " NOW" in out) == ("now" in f), path


def check_build(variant, before):
    """The binaries are what the variant says, seen from the process:
    slot types, slot page protection, lazy stubs before the first call."""
    f = flags(variant)
    check_files(variant)
    for obj in ("exe", "lib"):
        names = {name for (o, name, _) in before if o == obj}
        assert names == set(FAMILY), (obj, sorted(before))
    for (obj, name, kind), (cls, _, perms) in before.items():
        if "noplt" in f:
            assert kind == "glob", (obj, name, kind)
        if "norelro" in f:
            assert perms == "rw-p", (obj, name, perms)
        elif "now" in f or kind == "glob":
            assert perms == "r--p", (obj, name, kind, perms)   # RELRO
        else:
            assert perms == "rw-p", (obj, name, kind, perms)   # .got.plt
        if "lazy" not in f or kind == "glob":
            assert cls == "libc", (obj, name, kind, cls)
    if "plt" in f and "lazy" in f:
        # never called yet: still the PLT's lazy stub
        for obj in ("exe", "lib"):
            cls = before.get((obj, "posix_memalign", "jump"), ("none",))[0]
            assert cls == "lazy", (obj, cls)
    # no GLOB_DAT twin for a PLT call in these builds: one slot per name
    if "plt" in f:
        assert all(kind == "jump" for (_, _, kind) in before), sorted(before)


def our_sites(pid):
    p = attach(["-p", str(pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    header, sites = parse_json_dump(p.stdout)
    found = {}
    for loc, site in sites.items():
        for fn in PER_ROUND:
            if f"({fn}+" in loc:
                assert fn not in found, (fn, loc, found[fn])
                found[fn] = site
    return header, found


def control(pid, *args):
    p = attach(["-p", str(pid), *args])
    assert p.returncode == 0, p.stderr
    return p.stdout


def within(got, want):
    return abs(got - want) <= TOLERANCE


@needs_ptrace
@pytest.mark.parametrize("variant", VARIANTS)
def test_attach_counts_exe_and_library_and_detach_restores(spawn, variant):
    t = spawn([binary(variant)])
    t.expect("ready")
    # blocks made before the attach, freed during it: unknown frees
    ask(t, "round 3 mf", "round 3 blocks=6")
    before = slots(t)
    check_build(variant, before)

    control(t.pid, "--keep")
    during = slots(t)
    assert during.keys() == before.keys()
    for key, (cls, _, perms) in during.items():
        assert cls == "mwrap", (key, during[key])
        # the page protection was put back after the write
        assert perms == before[key][2], (key, before[key], during[key])

    rounds = 4
    ask(t, f"round {rounds} all", f"round {rounds} blocks=")
    _, sites = our_sites(t.pid)
    assert sites.keys() == PER_ROUND.keys(), sorted(sites)
    for fn, (calls, size) in PER_ROUND.items():
        s = sites[fn]
        assert s["allocations"] == rounds * calls, (fn, s)
        assert within(s["total_bytes"], rounds * size), (fn, s)
        # realloc's small block was freed by the realloc itself
        small = {"exe_realloc": 500, "lib_realloc": 600}.get(fn, 0)
        assert s["frees"] == (rounds if small else 0), (fn, s)
        assert within(s["live_bytes"], rounds * (size - small)), (fn, s)

    pre = 6
    freed = pre + rounds * BLOCKS_PER_ROUND
    ask(t, "free", f"freed {freed}")
    header, sites = our_sites(t.pid)
    for fn in PER_ROUND:
        s = sites[fn]
        assert s["frees"] == s["allocations"] and s["live_bytes"] == 0, (fn, s)
        assert s["freed_bytes"] == s["total_bytes"], (fn, s)
    # the six blocks from before the attach: 3 x 1000 + 3 x 1100 bytes
    assert header["unknown_frees"] >= pre, header
    assert header["unknown_freed_bytes"] >= 3 * 1000 + 3 * 1100, header

    # blocks made while attached, freed after the detach by libc alone
    ask(t, "round 1 all", "round 1 blocks=10")
    assert control(t.pid, "--detach").startswith("ok detach")
    after = slots(t)
    assert after == before, {k: (before[k], after.get(k)) for k in before
                             if after.get(k) != before[k]}

    ask(t, "round 2 all", "round 2 blocks=30")
    ask(t, "free", "freed 30")
    rc, rest, err = t.finish(timeout=20)
    assert rc == 0 and rest == ["bye OK"], (rc, rest, err)


@pytest.mark.parametrize("variant", VARIANTS)
def test_preloaded_counts_exe_and_library(tmp, variant):
    """LD_PRELOAD (scripts/mwrap): every slot binds to libmwrap's own
    definitions, however the objects were linked."""
    dump = tmp / "gotm.json"
    rounds = 3
    p = run([MWRAP, binary(variant)], timeout=30,
            env={"MWRAP": f"dump_path:{dump},dump_format:json"},
            input=f"round {rounds} all\nslots\nfree\nround 2 all\n")
    assert p.returncode == 0, (p.returncode, p.stderr)
    lines = p.stdout.splitlines()
    assert lines[-1] == "bye OK", lines
    slot_line = next(l for l in lines if l.startswith("slots"))
    for word in slot_line.split()[1:]:
        key, val = word.split("=", 1)
        cls = val.split(":")[0]
        # free is not called before "slots": a lazy PLT stub may remain
        allowed = ("mwrap", "lazy") if key.endswith(":free:jump") else ("mwrap",)
        assert cls in allowed, word
    _, sites = parse_json_dump(dump.read_text())
    found = {fn: s for fn in PER_ROUND for loc, s in sites.items()
             if f"({fn}+" in loc}
    assert found.keys() == PER_ROUND.keys(), sorted(sites)
    total = rounds + 2
    for fn, (calls, size) in PER_ROUND.items():
        s = found[fn]
        assert s["allocations"] == total * calls, (fn, s)
        assert within(s["total_bytes"], total * size), (fn, s)
        # the target freed everything before exit
        assert s["frees"] == s["allocations"] and s["live_bytes"] == 0, (fn, s)


@needs_ptrace
@pytest.mark.parametrize("variant", [
    "pie-relro-lazy-plt-addr",
    "nopie-relro-lazy-plt-addr",
])
def test_executable_taking_mallocs_address(spawn, variant):
    """A program that hands malloc to a library as a callback (gotmain.c
    with -DGOTM_TAKE_ADDRESS): the attach must still count both objects'
    direct calls and keep the process's own allocator.  Non-PIE, malloc's
    address is the executable's PLT entry, dlsym's answer too: the hooks
    forward to the definition it stands for, and no slot bound to that is
    taken for another allocator's."""
    t = spawn([binary(variant)])
    t.expect("ready")
    before = slots(t)
    said = control(t.pid, "--keep")
    assert "untraced_allocator_in" not in said, said
    rounds = 2
    ask(t, f"round {rounds} all", f"round {rounds} blocks=")
    _, sites = our_sites(t.pid)
    try:
        assert sites.keys() == PER_ROUND.keys(), (sorted(sites), said)
        for fn, (calls, size) in PER_ROUND.items():
            assert sites[fn]["allocations"] == rounds * calls, (fn, sites[fn])
            assert within(sites[fn]["total_bytes"], rounds * size), sites[fn]
    finally:
        assert control(t.pid, "--detach").startswith("ok detach")
        assert slots(t) == before
        rc, rest, err = t.finish(timeout=20)
        assert rc == 0 and rest == ["bye OK"], (rc, rest, err)
