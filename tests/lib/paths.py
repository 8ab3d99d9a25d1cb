# SPDX-License-Identifier: MIT
"""Where the tree and make's products are."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# where `make` leaves its products (the Makefile's LIBMWRAP, INJECTOR,
# RUBY_EXT)
LIB = os.path.join(ROOT, "build", "lib", "libmwrap.so")
INJECT = os.path.join(ROOT, "build", "bin", "mwrap-inject")
TARGETS = os.path.join(ROOT, "build", "targets")
# the Mwrap Ruby API: mwrap.rb in the tree, mwrap_ext.so built
RUBY_API_DIRS = [os.path.join(ROOT, "ruby-ext", "lib"), os.path.join(ROOT, "build", "ruby")]
RUBY_API_I = [arg for d in RUBY_API_DIRS for arg in ("-I", d)]   # ruby's options
RUBY_API_PATH = ":".join(RUBY_API_DIRS)                            # RUBYLIB
# the front ends
ATTACH = os.path.join(ROOT, "scripts", "mwrap-attach")
MWRAP = os.path.join(ROOT, "scripts", "mwrap")
LEAK_RB = os.path.join(ROOT, "tests", "targets", "leak.rb")
