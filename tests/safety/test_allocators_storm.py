# SPDX-License-Identifier: MIT
"""The malloc storm of test_matrix.py with each production allocator
preloaded: blocks made before the attach are freed while attached and
after the detach, from 1 and 4 threads, and the storm checks its own
data.  MWRAP_SAFETY_REPEAT times each (20 in `make test-safety`)."""
import os

import pytest

from conftest import TARGETS, attach, ptrace_allowed

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = {"jemalloc": "libjemalloc.so.2",
              "tcmalloc": "libtcmalloc_minimal.so.4"}


@pytest.mark.parametrize("alloc", sorted(ALLOCATORS))
@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("n", range(REPEAT))
def test_malloc_storm_with_allocator(spawn, alloc, threads, n):
    lib = os.path.join(LIBDIR, ALLOCATORS[alloc])
    if not os.path.exists(lib):
        pytest.skip(f"{alloc} not installed: scripts/install-deps")
    t = spawn([os.path.join(TARGETS, "storm"), str(threads), "300"],
              env={"LD_PRELOAD": lib})
    t.expect("ready")
    for _ in range(2):
        p = attach(["-p", str(t.pid), "--keep"], timeout=120)
        assert p.returncode == 0, p.stderr
        p = attach(["-p", str(t.pid), "--stats"])
        assert p.returncode == 0 and "allocations=" in p.stdout, p.stderr
        p = attach(["-p", str(t.pid), "--detach"])
        assert p.returncode == 0, p.stderr
    assert t.p.poll() is None, "the storm died"
    rc, rest, err = t.finish()
    assert rc == 0 and rest == [f"done {threads} threads ok"], (rest, err)
