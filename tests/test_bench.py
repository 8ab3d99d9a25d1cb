"""A quick smoke run of the benchmark driver: every figure is printed.
Speed itself is checked by `make bench`, never by a timed test."""
import os
import re

from conftest import ROOT, ptrace_allowed, run

import pytest


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_bench_smoke_prints_every_figure():
    p = run([os.path.join(ROOT, "bench", "run"), "--smoke"], timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for workload in ("churn", "threads_zlib"):
        for mode in ("preload", "attached", "sampled", "after-detach"):
            assert re.search(rf"^{workload}\s+{mode}\s+[\d.]+M\s+[\d.]+x\s+[\d.]+x\s+[\d.]+x\s+-?\d+",
                             out, re.M), (workload, mode, out)
    assert re.search(r"injection pause over 3 attaches: median [\d.]+ ms, p99 [\d.]+ ms", out)
    assert re.search(r"service throughput: before \d+ req/s, attached \d+ req/s", out)
    # at smoke scale a handful of samples stand for the leak: its rank is
    # chance there, so only the figure's presence is checked
    assert re.search(r"^ +\d+ sites +-?\d+ ns/alloc +-?\d+ ns/new site +dump +[\d.]+ ms +\d+ live blocks "
                     r"+[\d.]+ MiB own memory +\d+ bytes/live block$", out, re.M), out
    lives = re.findall(r"^ +(\d+) live blocks +-?\d+ ns/call +[\d.]+ MiB own memory +\d+ bytes/live block$",
                       out, re.M)
    assert len(lives) == 2 and int(lives[1]) >= 20_000, out
    assert re.search(r"flatness: -?[\d.]+x the per-call cost at \d+ live blocks", out), out
    assert re.search(r"leak ranking .*: full tracking (first|NOT first .*), "
                     r"sampled (first|NOT first .*)", out), out
