# SPDX-License-Identifier: MIT
"""Production allocators: jemalloc or tcmalloc preloaded or linked in, and
a library with an allocator of its own.  Every call must still reach the
allocator that made the block (a mixed free kills the target)."""
import os

import pytest

from conftest import (LEAK_RB, LIB, MWRAP, TARGETS, attach, needs_ptrace, parse_dump,
                      parse_json_dump, run, start_ready)

LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = {
    "glibc": None,
    "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
    "tcmalloc": os.path.join(LIBDIR, "libtcmalloc_minimal.so.4"),
}


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


def control(pid, *args):
    """mwrap-attach -p PID ARGS, which must succeed; its output."""
    p = attach(["-p", str(pid), *args])
    assert p.returncode == 0, p.stderr
    return p.stdout + p.stderr


def ask(t, command, answer):
    t.send(command)
    t.expect(answer)


def leak_here(pid):
    """The dump's site of deepbind.c's leak_here()."""
    _, sites = dump_json(pid)
    found = [s for loc, s in sites.items() if "leak_here" in loc]
    assert found, sites.keys()
    return found[0]


@needs_ptrace
@pytest.mark.parametrize("alloc", list(ALLOCATORS))
def test_ruby_survives_attach_cycles_with_each_allocator(spawn, alloc):
    t, fields = start_ready(spawn, ["ruby", LEAK_RB], env=preload_env(alloc))
    line = int(fields["leak_line"])
    # blocks made before the first attach, freed while attached and after
    ask(t, "leak 500 5000", "leaked")
    for cycle in range(3):
        control(t.pid, "--keep")
        ask(t, "leak 1000 10000", "leaked")
        header, sites = dump_json(t.pid)
        # the report names the allocator whose numbers it shows
        assert header["allocator"].split()[0] == alloc, header
        assert ("malloc_in_use_bytes" in header) == (alloc == "glibc")
        site = sites[f"{LEAK_RB}:{line}"]
        # 1000 strings of 10,000 bytes (heap buffer = size incl. NUL)
        assert site["live_count"] >= 1000, (alloc, cycle, site)
        assert abs(site["live_bytes"] - 10_000_000) <= 1_000_000, site
        ask(t, "churn 2000", "churned")
        control(t.pid, "--detach")
        ask(t, "churn 2000", "churned")
    rc, rest, err = t.finish()
    assert rc == 0, err
    assert rest[-1].startswith("bye "), rest


@needs_ptrace
def test_a_library_with_its_own_allocator_is_left_alone(spawn):
    """libdeep.so reaches libdeepalloc through RTLD_DEEPBIND while the
    process runs glibc: its slots must not be forwarded to glibc, or its
    blocks made before the attach and freed during it would kill the
    target (libdeepalloc aborts on a free that is not its own)."""
    t = spawn([os.path.join(TARGETS, "deepbind"),
               os.path.join(TARGETS, "libdeep.so")])
    t.expect("ready")
    ask(t, "keep 2000", "kept")
    said = control(t.pid, "--keep", "-v")
    assert "untraced_allocator_in=" in said and "libdeep.so" in said, said
    ask(t, "drop", "dropped")
    ask(t, "keep 100", "kept")
    ask(t, "leak 300", "leaked")
    assert leak_here(t.pid)["live_count"] == 300
    control(t.pid, "--detach")
    ask(t, "drop", "dropped")
    rc, rest, err = t.finish()
    assert rc == 0 and rest == ["bye"], err


@needs_ptrace
def test_c_target_with_jemalloc_linked_in(spawn):
    if not os.path.exists(os.path.join(TARGETS, "deepbind-jemalloc")):
        pytest.skip("libjemalloc-dev not installed when built: scripts/install-deps")
    t = spawn([os.path.join(TARGETS, "deepbind-jemalloc"),
               os.path.join(TARGETS, "libdeep.so")])
    t.expect("ready")
    ask(t, "keep 1000", "kept")
    ask(t, "leak 200", "leaked")
    for _ in range(2):
        control(t.pid, "--keep")
        ask(t, "leak 400", "leaked")
        assert leak_here(t.pid)["live_count"] == 400
        ask(t, "drop", "dropped")
        control(t.pid, "--detach")
        ask(t, "keep 500", "kept")
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
    p = run(["ruby", "-e", "puts 1"],
            env={"LD_PRELOAD": f"{env['LD_PRELOAD']}:{LIB}",
                 "MWRAP": f"dump_path:{tmp / 'x.dump'}"})
    assert p.returncode == 0 and p.stdout == "1\n"
    assert "put libmwrap.so first" in p.stderr
    assert not (tmp / "x.dump").exists()
