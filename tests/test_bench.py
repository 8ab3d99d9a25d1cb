# SPDX-License-Identifier: MIT
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
    workloads = ["churn", "threads_zlib"]
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"):
        workloads.append("churn+jemalloc")
    for workload in workloads:
        for mode in ("preload", "attached", "sampled", "after-detach"):
            assert re.search(rf"^{re.escape(workload)}\s+{mode}\s+[\d.]+M\s+[\d.]+x\s+[\d.]+x\s+[\d.]+x\s+-?\d+",
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
    # the flatness line is always there; its ratio only where its base
    # figure is above noise (a negative base made it vanish before)
    assert re.search(r"flatness: (-?[\d.]+x the per-call cost|n/a \(-?\d+ ns/call) "
                     r"at \d+ live blocks", out), out
    assert re.search(r"leak ranking .*: full tracking (first|NOT first .*), "
                     r"sampled (first|NOT first .*)", out), out
