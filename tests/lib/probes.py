# SPDX-License-Identifier: MIT
"""What this machine permits or has: ptrace, a gdb that works, which
Ruby, a browser.  Tests skip with the reason these give."""
import functools
import os
import shutil
import subprocess

import pytest

from lib.paths import ATTACH
from lib.procs import run, scaled


def ptrace_allowed():
    """Why live attach cannot run here, or None."""
    if os.geteuid() == 0:
        return None
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except OSError:
        scope = 0
    return None if scope == 0 else f"ptrace_scope={scope} and not root"


# a test (or, as pytestmark, a module) that attaches
needs_ptrace = pytest.mark.skipif(ptrace_allowed() is not None,
                                  reason=f"ptrace not permitted: {ptrace_allowed()}")


@functools.lru_cache(maxsize=None)
def gdb_unusable():
    """Why the gdb backend cannot attach here, or None: no gdb, or a gdb
    that cannot restore the processes it calls into (Debian 12's gdb
    13.1 on a CPU with AMX), as mwrap-attach --check-gdb finds.  Tests
    that drive gdb skip with this reason; test_gdb_probe checks the
    refusal itself."""
    if shutil.which("gdb") is None:
        return "gdb not installed"
    p = run([ATTACH, "--check-gdb"], timeout=120)
    if p.returncode == 0:
        return None
    return "the gdb here fails mwrap-attach --check-gdb: " + \
        p.stderr.strip().splitlines()[0]


def skip_unless_gdb_works():
    reason = gdb_unusable()
    if reason:
        pytest.skip(reason)


@functools.lru_cache(maxsize=None)
def ruby_version():
    """The `ruby` in PATH's RUBY_VERSION as a tuple of ints ((4, 1, 0))."""
    p = subprocess.run(["ruby", "-e", "print RUBY_VERSION"], timeout=scaled(60),
                       capture_output=True, text=True,
                       env=dict(os.environ, RUBYOPT=""))
    return tuple(int(x) for x in p.stdout.split("."))


def gc_line_bytes():
    """Bytes the GC's own bookkeeping may add to a Ruby line on which GCs
    run, beyond what a test allows for the line itself.  A GC started by
    an allocation allocates there (measured with native stacks of the
    small blocks charged to a line): on every Ruby its mark-stack chunks
    (4,008 B, stack_chunk_alloc, as the stack outgrows its cache); from
    Ruby 4.0 also its weak-reference list, an rb_darray shrunk after each
    GC to twice what it used and regrown by doubling reallocs during the
    next one's marking (1,040 to 8,208 B each; mark_cc_entry_i).  Ruby
    4.1's versions script put up to 20 chunks and 32 reallocs, 129,800 B
    in all, on one line: 0 before 4.0 (the tests' own slack holds 3.x's
    chunks), 128 KiB from 4.0."""
    return 131072 if ruby_version() >= (4,) else 0


@functools.lru_cache(maxsize=None)
def ruby_lacks(feature):
    """Why `ruby` cannot require @feature, or None: a Ruby built from
    source without its bundled gems (make test-ruby-src) has no fiddle
    from 4.0 on (a bundled gem since), and Debian's is built for Debian's
    own Ruby only."""
    p = subprocess.run(["ruby", "-e", f"require {feature!r}"], timeout=scaled(60),
                       capture_output=True, text=True)
    if p.returncode == 0:
        return None
    return (f"this ruby cannot require {feature} (a bundled gem there, and "
            f"a source build without bundled gems lacks it)")


CHROMIUM = shutil.which("chromium")
