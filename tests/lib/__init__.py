# SPDX-License-Identifier: MIT
"""The suite's shared helpers, one module per concern:

    paths     where the tree and make's products are
    procs     bounded process runs, driven targets, /proc readers
    targets   the Ruby targets tests start (leak.rb, fiddle_leak.rb)
    attach    mwrap-attach and mwrap-inject runs, the attach's traces
    dumps     the dump formats, parsed
    reports   mwrap-report's text, read as a reader would
    probes    what this machine permits or has (ptrace, gdb, Ruby)
    flame     an HTML report's flame graph in headless Chromium

tests/conftest.py imports every name, so `from conftest import X` finds
each; conftest.py itself keeps only pytest's fixtures."""
