# SPDX-License-Identifier: MIT
"""Ctrl-C at any moment of an attach: a terminal's Ctrl-C reaches
mwrap-attach's whole process group.  Whenever it lands (loading, the
checks, the injection, the window), the run ends with a reason and no
Ruby backtrace, the target is untouched or detached at once, and a new
attach right after it works (it may first wait for an old window's
end, and says so).  The moments start once Ruby itself has booted
(0.15 s, scaled): a Ctrl-C inside Ruby's own start (rubygems, before
any line of ours) is Ruby's to report.  make test runs 10 moments,
make test-safety 100."""
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import (ATTACH, attach, is_attached, ptrace_allowed, scaled, start_leak,
                      wait_injector)

REPEAT = int(os.environ.get("MWRAP_SAFETY_REPEAT", "2"))
pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")
INTERRUPTED = 17


def test_ctrl_c_at_random_moments_then_attach_again(spawn):
    t, line, _ = start_leak(spawn)
    for k in range(5 * REPEAT):
        p = subprocess.Popen([ATTACH, "-p", str(t.pid), "-d", "2"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        if k % 2:
            # during the injection itself, where it once cut the
            # injector short ("injection failed: ") and left a window
            assert wait_injector(p.pid, scaled(30)), "no injection seen"
        else:
            time.sleep(scaled(0.15) + random.uniform(0, 0.6))
        os.killpg(p.pid, signal.SIGINT)      # as a terminal's Ctrl-C does
        out, err = p.communicate(timeout=scaled(60))
        assert p.returncode in (0, INTERRUPTED), (k, p.returncode, err)
        assert "Traceback" not in err and "Interrupt" not in err, err
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if p.returncode == INTERRUPTED:
            assert last.startswith("mwrap-attach: interrupted") and len(last) > 40, err
        else:
            assert out.startswith("mwrap report: "), err   # the window's report
        # the target is untouched or detached again: a new attach works
        t.send("leak 20 3000")
        t.expect("leaked")
        q = attach(["-p", str(t.pid), "-d", "0.5"], timeout=scaled(60))
        assert q.returncode == 0, (k, q.stderr)
        assert not is_attached(t.pid)
        assert t.p.poll() is None, "the target died"
    rc, _, _ = t.finish()
    assert rc == 0
