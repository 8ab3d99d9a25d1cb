"""Issue 26, item 3: a process that exits while attached: with --keep its
final dump goes where the attach said."""
import os
import re
import shutil

import pytest

from conftest import LEAK_RB, attach, parse_dump, ptrace_allowed, start_leak

needs_ptrace = pytest.mark.skipif(ptrace_allowed() is not None,
                                  reason=f"ptrace not permitted: {ptrace_allowed()}")


@needs_ptrace
def test_keep_leaves_its_final_dump_where_it_said_at_exit(spawn):
    t, line, _ = start_leak(spawn)
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    dump = re.search(r"\(to (/tmp/mwrap\.\d+\.\w+/dump) in the target's filesystem\)", p.stderr).group(1)
    d = os.path.dirname(dump)
    try:
        t.send("leak 100 5000")
        t.expect("leaked")
        rc, _, _ = t.finish()
        assert rc == 0
        total, calls = parse_dump(open(dump).read())[f"{LEAK_RB}:{line}"]
        assert calls >= 100 and total >= 500_000
        # as --detach leaves it: the dump alone
        assert os.listdir(d) == ["dump"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
