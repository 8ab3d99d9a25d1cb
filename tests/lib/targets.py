# SPDX-License-Identifier: MIT
"""The Ruby targets tests start (tests/targets/), and what is known of
their lines."""
import os

import pytest

from lib.paths import LEAK_RB, ROOT
from lib.procs import run

# Small allocations a leak line makes beside its strings (the KEEP
# array's growth, first-call caches): Ruby 3.3 makes up to 11 more there
# than 3.1 (leak 10: 15, leak 5: 10, leak 100: 109, leak 200: 211),
# never a string.
LINE_SLACK = 10


def start_ready(spawn, argv, **kw):
    """Starts a target (spawn's keywords, e.g. env) and waits for its
    "ready" line: (target, the line's key=value words as a dict)."""
    t = spawn(argv, **kw)
    ready = t.expect("ready")
    return t, dict(w.split("=", 1) for w in ready.split() if "=" in w)


def start_leak(spawn):
    """tests/targets/leak.rb: (target, its leaking line, its zlib line)."""
    t, fields = start_ready(spawn, ["ruby", LEAK_RB])
    return t, int(fields["leak_line"]), int(fields["zlib_line"])


def private_tmp(tmp, unshare=("--mount",), name="private"):
    """A /tmp of a container-like target's own: tmp/NAME, mode 1777,
    holding leak.rb (world-readable); skips where unshare UNSHARE is
    not permitted."""
    probe = run(["unshare", *unshare, "true"])
    if probe.returncode != 0:
        pytest.skip(f"unshare not permitted here: {probe.stderr.strip()}")
    private = tmp / name
    private.mkdir()
    os.chmod(private, 0o1777)
    with open(LEAK_RB) as src, open(private / "leak.rb", "w") as dst:
        dst.write(src.read())
    os.chmod(private / "leak.rb", 0o644)
    return private


def fiddle_leak():
    """tests/targets/fiddle_leak.rb (100,000 x Fiddle.malloc(1024), half
    freed): (its text, the line of its Fiddle.malloc)."""
    with open(os.path.join(ROOT, "tests", "targets", "fiddle_leak.rb")) as f:
        text = f.read()
    return text, next(i for i, l in enumerate(text.splitlines(), 1) if "Fiddle.malloc" in l)
