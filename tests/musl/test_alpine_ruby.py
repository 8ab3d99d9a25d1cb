# SPDX-License-Identifier: MIT
"""A musl Ruby (3.4.3 from source, YJIT on) in a root laid out as Alpine
lays out its files (make test-musl; tests/musl/alpine.py): a leaking
service (tests/targets/leak.rb) attached from the host (glibc's Ruby
runs the front end: the musl build is copied into the root's /tmp) by
both backends and from inside the root (musl's Ruby runs it), preloaded
under `mwrap`, with --gc and --objects: its leak line named first, its
stacks there, detached, and the service runs on.  A tree without the
musl build gets the one-line cause."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alpine import (ALPINE, GDB_PATH, PATH, SRC, WANTED, in_root, inside, make_run,  # noqa: E402
                    missing, with_gdb)
from conftest import (ATTACH, ROOT, during_window, first_source_line,  # noqa: E402
                      is_attached, parse_json_dump, private_tree, ptrace_allowed, run,
                      scaled, skip_unless_gdb_works, start_ready, tracer_of)

pytestmark = [
    pytest.mark.skipif(not WANTED, reason="make test-musl runs these"),
    pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted"),
]


@pytest.fixture(autouse=True)
def root_ready():
    """make test-musl asked for them: what is missing fails them."""
    assert missing() is None, missing()

RUBY = "/usr/local/bin/ruby"
LEAK_RB = f"{SRC}/tests/targets/leak.rb"
LOADER = f"/lib/ld-musl-{os.uname().machine}.so.1"
MWRAP_REPORT = os.path.join(ROOT, "scripts", "mwrap-report")


def start(spawn, run_dir, env=None, argv=(RUBY, "--yjit", LEAK_RB)):
    """leak.rb on the musl Ruby with YJIT on, in the root: (target, its
    leak line as reports name it)."""
    t, fields = start_ready(spawn, in_root(run_dir, list(argv), env))
    return t, f"{LEAK_RB}:{fields['leak_line']}"


def load(t):
    """What the window sees: 200 blocks of 4,096 bytes kept, garbage."""
    def act():
        t.send("leak 200 4096")
        t.expect("leaked 200")
        t.send("churn 500")
        t.expect("churned")
    return act


def report(path):
    """A --format=json report: (header, sites, its site records in its
    order, all its records)."""
    text = open(path).read()
    header, sites = parse_json_dump(text)
    records = [json.loads(l) for l in text.splitlines()[1:]]
    return header, sites, [r for r in records if r["type"] == "site"], records


def check_named_and_detached(t, path, leak):
    """The report at PATH names LEAK first, with its stack; the target
    is detached and answers, its checksum (the bytes of the strings it
    keeps: SIZE - 1 each) what load() and one more leak gave it."""
    header, sites, ranked, records = report(path)
    assert header["allocator"] == "musl", header
    assert ranked[0]["location"] == leak, ranked[:3]
    assert sites[leak]["live_bytes"] >= 200 * 4096, sites[leak]
    stack = next(r["stack"] for r in records if r["type"] == "stack" and r["location"] == leak)
    assert stack[0].startswith(f"{leak} in leak") and stack[-1].endswith("in <main>"), stack
    assert not is_attached(t.pid) and tracer_of(t.pid) == 0
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"bye {200 * 4095 + 499}"], (rc, rest, err)


def attach_inside(t, path=PATH, args=()):
    """mwrap-attach -p T -d 2 ARGS on musl's Ruby in T's mount namespace
    and root, as `kubectl exec` into the pod would, with PATH: its
    stderr, once it exited 0.  Its JSON report is the root's
    /tmp/report.json (the run directory's tmp/)."""
    argv = ["env", "-i", f"PATH={path}", "HOME=/root",
            "nsenter", "-t", str(t.pid), "-m", "-r", "-w",
            RUBY, f"{SRC}/scripts/mwrap-attach", "-p", str(t.pid), "-d", "2",
            *args, "--format=json", "-o", "/tmp/report.json"]
    rc, _, err = during_window(argv, t.pid, load(t))
    assert rc == 0, err
    return err


def preloaded(spawn, run_dir, ruby_args=()):
    """leak.rb under `mwrap` in the root (its sh is busybox's, as
    Alpine's), 1000 blocks of 4,096 bytes kept, exited: (its exit
    dump's path, header and sites, its leak line)."""
    t, leak = start(spawn, run_dir, env={"MWRAP": "dump_path:/tmp/exit.json,dump_format:json"},
                    argv=(f"{SRC}/scripts/mwrap", RUBY, *ruby_args, LEAK_RB))
    t.send("leak 1000 4096")
    t.expect("leaked 1000")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"bye {1000 * 4095}"], (rc, rest, err)
    path = run_dir / "tmp" / "exit.json"
    header, sites, _, _ = report(path)
    return path, header, sites, leak


def test_the_root_is_laid_out_as_alpine_and_ruby_runs_yjit(tmp):
    loader = os.path.join(ALPINE, LOADER.lstrip("/"))
    assert os.path.isfile(loader) and not os.path.islink(loader)
    glibc = [os.path.join(d, f) for d, _, fs in os.walk(ALPINE) for f in fs
             if f.startswith(("libc.so.6", "ld-linux"))]
    assert glibc == []
    p = run(in_root(make_run(tmp), [RUBY, "--yjit", "-e",
                                    "puts RUBY_PLATFORM, RUBY_VERSION, RubyVM::YJIT.enabled?"]))
    assert p.returncode == 0, p.stderr
    platform, version, yjit = p.stdout.split()
    assert platform.endswith("-linux-musl") and version == "3.4.3" and yjit == "true"


@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
def test_attached_from_the_host(spawn, tmp, backend):
    if backend == "gdb":
        skip_unless_gdb_works()
    run_dir = make_run(tmp)
    t, leak = start(spawn, run_dir)
    out = tmp / "report.json"
    rc, _, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2", f"--backend={backend}", "-v",
                                "--format=json", "-o", str(out)], t.pid, load(t))
    assert rc == 0, err
    assert "copied the library to /tmp/mwrap-lib." in err, err
    check_named_and_detached(t, out, leak)


@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
def test_attached_from_inside_the_root(spawn, tmp, backend):
    """As `kubectl exec` into the pod would: the front end on musl's
    Ruby, with the musl mwrap-inject, in the target's root; gdb is
    Debian's, run there by its own loader (alpine.with_gdb): what runs
    on musl is ours, gdb's probe and its calls into the target."""
    run_dir = make_run(tmp)
    path = PATH
    if backend == "gdb":
        skip_unless_gdb_works()
        with_gdb(run_dir)
        path = GDB_PATH
    t, leak = start(spawn, run_dir)
    err = attach_inside(t, path, ["-v", f"--backend={backend}"])
    assert "copied the library" not in err, err    # the root's own path
    assert ("MW_RESULT=0" in err) == (backend == "gdb"), err    # gdb/attach.py's line
    check_named_and_detached(t, run_dir / "tmp" / "report.json", leak)


def test_gdb_from_inside_the_root_is_refused_with_its_cause(spawn, tmp):
    """No gdb in the root (Alpine's: `apk add gdb`): exit 7 in one line
    and what to do; the target untouched."""
    run_dir = make_run(tmp)
    t, _ = start(spawn, run_dir)
    rc, _, err = inside(t.pid, [RUBY, f"{SRC}/scripts/mwrap-attach", "-p", str(t.pid), "-d", "1",
                                "--backend=gdb"], scaled(60))
    assert rc == 7, (rc, err)
    assert err.startswith("mwrap-attach: gdb is not installed"), err
    assert "apk add gdb" in err, err
    assert tracer_of(t.pid) == 0 and not is_attached(t.pid)
    t.send("leak 1 500")
    t.expect("leaked 1")


def test_gc_and_objects(spawn, tmp):
    """--gc (a full GC on a Ruby thread at a safe point) and --objects
    (Ruby's own view) on the musl Ruby: the leak survives the GCs and
    is first; the object view has no errors."""
    run_dir = make_run(tmp)
    t, leak = start(spawn, run_dir)
    out = tmp / "report.json"
    rc, _, err = during_window([ATTACH, "-p", str(t.pid), "-d", "2", "--gc", "--objects",
                                "--format=json", "-o", str(out)], t.pid, load(t))
    assert rc == 0, err
    header, sites, ranked, records = report(out)
    assert ranked[0]["location"] == leak, ranked[:3]
    assert header["held_gc_count"] >= 1, header
    assert sites[leak]["held_bytes"] >= 200 * 4096, sites[leak]
    obj = next(r for r in records if r["type"] == "objects")
    assert obj["errors"] == [], obj["errors"]
    assert obj["memsize_by_type"]["T_STRING"] >= 200 * 4096
    assert obj["gc_stat"]["count"] >= 1
    check_named_and_detached(t, out, leak)


def test_preloaded_under_mwrap(spawn, tmp):
    """`mwrap ruby` in the root (its sh is busybox's, as Alpine's):
    the exit dump names the leak line first."""
    path, header, sites, leak = preloaded(spawn, make_run(tmp), ["--yjit"])
    assert header["allocator"] == "musl" and header["at_exit"]
    assert max(sites, key=lambda loc: sites[loc]["live_bytes"]) == leak
    assert sites[leak]["live_bytes"] >= 1000 * 4096
    # musl's calloc and aligned functions call malloc by its interposed
    # name: those inner calls are not sites of their own
    inner = [loc for loc in sites if loc.startswith(LOADER) and
             any(f"({fn}+" in loc for fn in ("calloc", "realloc", "aligned_alloc", "memalign"))]
    assert inner == [], inner
    p = run([MWRAP_REPORT, str(path)])
    assert p.returncode == 0 and first_source_line(p.stdout) == leak, p.stdout[:2000]


def test_a_tree_without_the_musl_build_gives_the_cause(spawn, tmp):
    """Today's glibc-only install: exit 8, the cause and the fix in one
    line each; the target untouched."""
    run_dir = make_run(tmp, musl=False)
    t, _ = start(spawn, run_dir)
    attach, _ = private_tree(tmp)
    p = run([attach, "-p", str(t.pid), "-d", "1"])
    assert p.returncode == 8, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    # maps name the loader by its path from our root
    assert lines[0].startswith(f"mwrap-attach: process {t.pid} runs on musl libc ("), lines
    assert f"{LOADER}) and " in lines[0] and "is built for glibc" in lines[0], lines
    assert "run 'make build-musl'" in lines[1] and len(lines) == 2, lines
    assert tracer_of(t.pid) == 0 and not is_attached(t.pid)
    t.send("leak 1 500")
    t.expect("leaked 1")
    rc, _, _ = t.finish()
    assert rc == 0



def test_inside_without_the_musl_build_says_what_to_build(spawn, tmp):
    """A tree copied from Debian without the musl build, run by musl's
    Ruby: its mwrap-inject cannot run there, which is said in one line
    with the fix (exit 9), never a traceback; the target untouched."""
    run_dir = make_run(tmp, musl=False)
    t, _ = start(spawn, run_dir)
    rc, _, err = inside(t.pid, [RUBY, f"{SRC}/scripts/mwrap-attach", "-p", str(t.pid), "-d", "1"],
                        scaled(60))
    assert rc == 9, (rc, err)
    assert err.splitlines() == [
        f"mwrap-attach: cannot run {SRC}/build/bin/mwrap-inject (ENOENT): it is not built for "
        "this machine's C library (musl)",
        "mwrap-attach: run 'make build-musl' in the source tree"], err
    assert tracer_of(t.pid) == 0 and not is_attached(t.pid)
    t.send("leak 1 500")
    t.expect("leaked 1")


def test_a_native_alpine_build_is_found(spawn, tmp):
    """make (or the gem's install) run on Alpine leaves the musl build
    where a Debian one leaves glibc's (build/lib, build/bin), with no
    build/musl: mwrap preloads it and mwrap-attach, run inside, loads it."""
    run_dir = make_run(tmp, native=True)
    _, _, sites, leak = preloaded(spawn, run_dir)
    assert max(sites, key=lambda loc: sites[loc]["live_bytes"]) == leak
    t, leak = start(spawn, run_dir)
    attach_inside(t)
    assert f"{SRC}/build/lib/libmwrap.so" in open(f"/proc/{t.pid}/maps").read()
    check_named_and_detached(t, run_dir / "tmp" / "report.json", leak)
