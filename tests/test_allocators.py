"""Production allocators: jemalloc or tcmalloc preloaded or linked in, and
a library with an allocator of its own.  Every call must still reach the
allocator that made the block (a mixed free kills the target)."""
import os

import pytest

from conftest import (LEAK_RB, MWRAP, TARGETS, attach, parse_dump,
                      parse_json_dump, ptrace_allowed, run, start_leak,
                      start_ready)

LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = {
    "glibc": None,
    "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
    "tcmalloc": os.path.join(LIBDIR, "libtcmalloc_minimal.so.4"),
}

needs_ptrace = pytest.mark.skipif(
    ptrace_allowed() is not None,
    reason=f"ptrace not permitted: {ptrace_allowed()}")


def preload_env(name):
    lib = ALLOCATORS[name]
    if lib is None:
        return {}
    if not os.path.exists(lib):
        pytest.skip(f"{name} not installed ({lib}): scripts/install-deps")
    return {"LD_PRELOAD": lib}


def dump_json(pid):
    p = attach(["-p", str(pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    return parse_json_dump(p.stdout)


@needs_ptrace
@pytest.mark.parametrize("alloc", list(ALLOCATORS))
def test_ruby_survives_attach_cycles_with_each_allocator(spawn, alloc):
    env = preload_env(alloc)
    t, fields = start_ready(spawn, ["ruby", LEAK_RB]) if not env else \
        _start_leak_env(spawn, env)
    line = int(fields["leak_line"])
    # blocks made before the first attach, freed while attached and after
    t.send("leak 500 5000")
    t.expect("leaked")
    for cycle in range(3):
        p = attach(["-p", str(t.pid), "--keep"])
        assert p.returncode == 0, p.stderr
        t.send("leak 1000 10000")
        t.expect("leaked")
        header, sites = dump_json(t.pid)
        # the report names the allocator whose numbers it shows
        assert header["allocator"].split()[0] == alloc, header
        assert ("malloc_in_use_bytes" in header) == (alloc == "glibc")
        site = sites[f"{LEAK_RB}:{line}"]
        # 1000 strings of 10,000 bytes (heap buffer = size incl. NUL)
        assert site["live_count"] >= 1000, (alloc, cycle, site)
        assert abs(site["live_bytes"] - 10_000_000) <= 1_000_000, site
        t.send("churn 2000")
        t.expect("churned")
        p = attach(["-p", str(t.pid), "--detach"])
        assert p.returncode == 0, p.stderr
        t.send("churn 2000")
        t.expect("churned")
    rc, rest, err = t.finish()
    assert rc == 0, err
    assert rest[-1].startswith("bye "), rest


def _start_leak_env(spawn, env):
    t = spawn(["ruby", LEAK_RB], env=env)
    ready = t.expect("ready")
    return t, dict(w.split("=", 1) for w in ready.split() if "=" in w)


@needs_ptrace
def test_a_library_with_its_own_allocator_is_left_alone(spawn):
    """libdeep.so reaches jemalloc through RTLD_DEEPBIND while the process
    runs glibc: its slots must not be forwarded to glibc, or its blocks
    made before the attach and freed during it would kill the target."""
    deep = os.path.join(TARGETS, "libdeep.so")
    t = spawn([os.path.join(TARGETS, "deepbind"), deep])
    t.expect("ready")
    t.send("keep 2000")
    t.expect("kept")
    p = attach(["-p", str(t.pid), "--keep", "-v"])
    assert p.returncode == 0, p.stderr
    assert "untraced_allocator_in=" in p.stderr + p.stdout
    assert "libdeep.so" in p.stderr + p.stdout
    t.send("drop")
    t.expect("dropped")
    t.send("keep 100")
    t.expect("kept")
    t.send("leak 300")
    t.expect("leaked")
    _, sites = dump_json(t.pid)
    leak = [s for loc, s in sites.items() if "leak_here" in loc]
    assert leak and leak[0]["live_count"] == 300, sites.keys()
    p = attach(["-p", str(t.pid), "--detach"])
    assert p.returncode == 0, p.stderr
    t.send("drop")
    t.expect("dropped")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == ["bye"], err


@needs_ptrace
def test_c_target_with_jemalloc_linked_in(spawn):
    t = spawn([os.path.join(TARGETS, "deepbind-jemalloc"),
               os.path.join(TARGETS, "libdeep.so")])
    t.expect("ready")
    t.send("keep 1000")
    t.expect("kept")
    t.send("leak 200")
    t.expect("leaked")
    for _ in range(2):
        p = attach(["-p", str(t.pid), "--keep"])
        assert p.returncode == 0, p.stderr
        t.send("leak 400")
        t.expect("leaked")
        _, sites = dump_json(t.pid)
        leak = [s for loc, s in sites.items() if "leak_here" in loc]
        assert leak and leak[0]["live_count"] == 400, sites.keys()
        t.send("drop")
        t.expect("dropped")
        p = attach(["-p", str(t.pid), "--detach"])
        assert p.returncode == 0, p.stderr
        t.send("keep 500")
        t.expect("kept")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == ["bye"], err


@pytest.mark.parametrize("alloc", ["jemalloc", "tcmalloc"])
def test_mwrap_with_an_allocator_already_preloaded(tmp, alloc):
    env = preload_env(alloc)
    dump = tmp / "out.dump"
    script = ("KEEP = []\n"
              "2000.times { KEEP << ('x' * 9999) }\n")
    rb = tmp / "keep.rb"
    rb.write_text(script)
    p = run([MWRAP, "ruby", str(rb)],
            env={**env, "MWRAP": f"dump_path:{dump}"})
    assert p.returncode == 0, p.stderr
    sites = parse_dump(dump.read_text())
    total, calls = sites[f"{rb}:2"]
    assert calls >= 2000 and abs(total - 20_000_000) <= 2_000_000


def test_mwrap_behind_another_allocator_says_so(tmp):
    """A child whose LD_PRELOAD puts jemalloc before libmwrap cannot be
    traced by interposition: it must say so rather than run silently."""
    env = preload_env("jemalloc")
    lib = os.path.join(os.path.dirname(MWRAP), "..", "preload", "libmwrap.so")
    p = run(["ruby", "-e", "puts 1"],
            env={"LD_PRELOAD": f"{env['LD_PRELOAD']}:{lib}",
                 "MWRAP": f"dump_path:{tmp / 'x.dump'}"})
    assert p.returncode == 0 and p.stdout == "1\n"
    assert "put libmwrap.so first" in p.stderr
    assert not (tmp / "x.dump").exists()
