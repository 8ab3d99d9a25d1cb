# SPDX-License-Identifier: MIT
"""Our pprof profiles read by the real `go tool pprof` (Debian's
golang-go): -top gives each Ruby line its own row with its exact bytes,
native sites show the function the dump named, -diff_base subtracts."""
import json
import os
import re
import shutil

import pytest

from conftest import ROOT, run

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
GO = shutil.which("go")
pytestmark = pytest.mark.skipif(
    GO is None, reason="go not installed (scripts/install-deps installs golang-go)")

LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"
# a binary there is on every machine (pprof looks for it to symbolize: a
# missing one is "not available"), at an address with no symbol
RUBY_BIN = os.path.realpath(shutil.which("ruby") or "/usr/bin/ruby")
UNNAMED = f"{os.path.basename(RUBY_BIN)}+0x1a2f0"


def site(location, total, allocations, live, live_count):
    return {"type": "site", "location": location, "total_bytes": total,
            "allocations": allocations, "frees": allocations - live_count,
            "freed_bytes": total - live, "live_bytes": live,
            "live_count": live_count, "age_total": 0, "max_lifespan": 0}


# Two lines of one file, the one allocating more holding less; a native
# site dladdr named, one it did not (no exported symbol).
NEW = [site("app/cache.rb:20", 3000000, 300, 3000000, 300),
       site("app/cache.rb:31", 9000000, 9000, 1000000, 1000),
       site(f"{LIBZ}(deflateInit2_+0x1a2)[0x7f0000001234]", 400000, 4, 200000, 2),
       site(f"{RUBY_BIN}(+0x1a2f0)[0x55000001a2f0]", 4000, 4, 3000, 3)]
OLD = [site("app/cache.rb:20", 1000000, 100, 1000000, 100),
       site("app/cache.rb:31", 6000000, 6000, 1500000, 1500),
       site("app/gone.rb:7", 70000, 7, 70000, 7)]


def profile(tmp, name, sites):
    dump = tmp / f"{name}.json"
    header = {"type": "header", "version": "0.1", "pid": 4242, "seconds": 10,
              "sample_bytes": 0}
    dump.write_text("".join(json.dumps(r) + "\n" for r in [header] + sites))
    out = tmp / f"{name}.pb.gz"
    p = run([REPORT, "--format", "pprof", "-o", str(out), str(dump)])
    assert p.returncode == 0, p.stderr
    return str(out)


def top(tmp, *args):
    """{name: flat bytes} from `go tool pprof -top`, every node kept."""
    p = run([GO, "tool", "pprof", "-top", "-unit=B", "-nodefraction=0",
             "-nodecount=100"] + list(args), cwd=tmp,
            env={"HOME": str(tmp), "PPROF_TMPDIR": str(tmp), "GOTOOLCHAIN": "local"},
            timeout=120)
    assert p.returncode == 0, p.stderr
    assert "not available" not in p.stderr     # every location has a mapping
    rows = re.findall(r"^\s*(-?\d+)B\s+\S+%\s+\S+%\s+-?\d+B\s+\S+%\s+(.+?)\s*$",
                      p.stdout, re.M)
    assert rows, p.stdout
    return {name: int(flat) for flat, name in rows}


def test_top_separates_the_lines_of_a_file(tmp):
    new = profile(tmp, "new", NEW)
    assert top(tmp, new) == {"app/cache.rb:20": 3000000, "app/cache.rb:31": 1000000,
                             "deflateInit2_": 200000, UNNAMED: 3000}
    assert top(tmp, "-sample_index=alloc_space", new) == {
        "app/cache.rb:20": 3000000, "app/cache.rb:31": 9000000,
        "deflateInit2_": 400000, UNNAMED: 4000}


def test_diff_base(tmp):
    old, new = profile(tmp, "old", OLD), profile(tmp, "new", NEW)
    assert top(tmp, f"-diff_base={old}", new) == {
        "app/cache.rb:20": 2000000, "app/cache.rb:31": -500000,
        "app/gone.rb:7": -70000, "deflateInit2_": 200000, UNNAMED: 3000}
