# SPDX-License-Identifier: MIT
"""pytest's fixtures for the suite.  The shared helpers are in tests/lib/
(one module per concern: lib/__init__.py lists them); every name is
imported here too, so that a test's `from conftest import X` finds it."""
import pytest

from lib.attach import (RUNTIME_DIR, attach, attach_during, during_window,  # noqa: F401
                        helper_answered, inject, inject_result, is_attached,
                        runtime_dir, wait_injector)
from lib.dumps import DUMP_LINE, parse_dump, parse_json_dump  # noqa: F401
from lib.flame import (FLAME_FRAMES, FLAME_ROW, FLAME_WIDTH, by_location,  # noqa: F401
                       check_flame_rooted_at, chromium, flame_frames, with_vars)
from lib.paths import (ATTACH, INJECT, LEAK_RB, LIB, MWRAP, ROOT,  # noqa: F401
                       RUBY_API_DIRS, RUBY_API_I, RUBY_API_PATH, TARGETS,
                       private_tree)
from lib.probes import (CHROMIUM, gc_line_bytes, gdb_unusable, needs_ptrace,  # noqa: F401
                        ptrace_allowed, ruby_lacks, ruby_version,
                        skip_unless_gdb_works)
from lib.procs import (TEST_SLOW, TIMEOUT, Proc, clean_env, family,  # noqa: F401
                       our_files, proc_stat, remove, run, scaled, stop_all,
                       tracer_of, untraced_within)
from lib.reports import (SOURCE_LINE, first_site, first_source_line,  # noqa: F401
                         sections, site_rows, site_value)
from lib.targets import (LINE_SLACK, fiddle_leak, private_tmp,  # noqa: F401
                         start_leak, start_ready)


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


@pytest.fixture
def spawn():
    """Starts target processes and kills any still running at teardown,
    removing what an attach left on the host for them."""
    procs = []

    def start(argv, **kw):
        proc = Proc(argv, **kw)
        procs.append(proc)
        return proc
    yield start
    stop_all(procs)
