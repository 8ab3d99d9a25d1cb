# SPDX-License-Identifier: MIT
"""What musl taught us, checked on glibc: a C library that lacks some of
the malloc family.  musl has no pvalloc; when one function could not be
found, the preloaded library used to serve every call from its 64 KiB
bootstrap arena until it ran out, and the program crashed (exit 139).
An optional function the C library lacks is now simply not forwarded
to, and when a required one is missing, "not tracing" means passing
every call straight through.

build/targets/libhidesym.so, preloaded before libmwrap.so, hides the
functions named in MWTEST_HIDE from dlsym (tests/targets/hidesym.c)."""
import os

import pytest

from conftest import (LEAK_RB, LIB, LINE_SLACK, TARGETS, attach, parse_json_dump,
                      ptrace_allowed, run, start_ready)

pytestmark = pytest.mark.fast

HIDESYM = os.path.join(TARGETS, "libhidesym.so")
HELLO = os.path.join(TARGETS, "hello")
HELLO_OUT = "HELLO_FROM_C 1 enomem=1\n"
# every optional entry point of the malloc family
OPTIONAL = "pvalloc,valloc,memalign,aligned_alloc,posix_memalign,reallocarray"


def preloaded(argv, hide, dump):
    return run(argv, env={"LD_PRELOAD": f"{HIDESYM}:{LIB}",
                          "MWTEST_HIDE": hide,
                          "MWRAP": f"dump_path:{dump},dump_format:json"})


def leak_here(dump):
    """hello's leak_here site: 1000 x 4096 bytes, 499 blocks live."""
    _, sites = parse_json_dump(dump.read_text())
    mine = [s for loc, s in sites.items() if "(leak_here+0x" in loc]
    assert len(mine) == 1, list(sites)
    return mine[0]


@pytest.mark.parametrize("hide", ["", "pvalloc", OPTIONAL])
def test_an_optional_function_missing_is_not_forwarded_and_tracing_goes_on(tmp, hide):
    """Nothing hidden is the control: the hider itself changes nothing."""
    dump = tmp / "d.json"
    p = preloaded([HELLO], hide, dump)
    assert p.returncode == 0, p.stderr
    assert p.stdout == HELLO_OUT
    assert "not tracing" not in p.stderr
    site = leak_here(dump)
    assert site["allocations"] == 1000 and site["total_bytes"] == 4096 * 1000
    assert site["live_bytes"] == 4096 * 499


def test_a_ruby_without_pvalloc_names_its_leak_line(tmp):
    """musl Ruby's case: the line that keeps 100 x 100,000 bytes."""
    script = tmp / "keep.rb"
    script.write_text("$keep = []\n"
                      "100.times { $keep << ('x' * 100_000) }\n"
                      "puts :done\n")
    dump = tmp / "d.json"
    p = preloaded(["ruby", "--disable-gems", str(script)], "pvalloc", dump)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "done\n"
    _, sites = parse_json_dump(dump.read_text())
    site = sites[f"{script}:2"]
    # each string's 100,000 bytes plus its NUL; Ruby's own small
    # allocations on that line stay under 4 KiB
    assert 100 * 100_001 <= site["live_bytes"] < 100 * 100_001 + 4096


@pytest.mark.parametrize("hide", ["calloc", "realloc"])
def test_a_required_function_missing_passes_every_call_through(tmp, hide):
    """Untraced, the program runs as without us: hello allocates 4 MB,
    far beyond the bootstrap arena.  The missing function itself fails
    with ENOMEM (hello checks calloc's and realloc's failures, which
    then hold either way)."""
    dump = tmp / "d.json"
    p = preloaded([HELLO], hide, dump)
    assert p.returncode == 0, p.stderr
    assert p.stdout == HELLO_OUT
    assert f"mwrap: not tracing: cannot find the real {hide}\n" in p.stderr
    assert not dump.exists()


@pytest.mark.skipif(ptrace_allowed() is not None,
                    reason=f"ptrace not permitted: {ptrace_allowed()}")
def test_attach_where_rtld_next_finds_nothing(spawn):
    """musl's dlsym(RTLD_NEXT), from a library loaded by dlopen, finds
    nothing of libc's: the real functions then come from the global
    scope (they used to be missing: "mw_attach failed in the target")."""
    t, line, _ = start_leak_env(spawn, {"LD_PRELOAD": HIDESYM,
                                        "MWTEST_NO_NEXT": "1"})
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    t.send("leak 200 10000")
    t.expect("leaked")
    p = attach(["-p", str(t.pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    _, sites = parse_json_dump(p.stdout)
    site = sites[f"{LEAK_RB}:{line}"]
    assert 200 <= site["live_count"] <= 200 + LINE_SLACK
    assert abs(site["live_bytes"] - 2_000_000) <= 200_000
    p = attach(["-p", str(t.pid), "--detach"])
    assert p.returncode == 0 and p.stdout.startswith("ok detach"), p.stderr
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == ["bye 1999800"]


def start_leak_env(spawn, env):
    """tests/targets/leak.rb started with ENV: (target, its leak line,
    its zlib line)."""
    t, fields = start_ready(spawn, ["ruby", LEAK_RB], env=env)
    return t, int(fields["leak_line"]), int(fields["zlib_line"])
