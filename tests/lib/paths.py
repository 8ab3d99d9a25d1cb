# SPDX-License-Identifier: MIT
"""Where the tree and make's products are."""
import os
import shutil

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


def private_tree(tmp, musl=False):
    """A copy of our scripts and build products under TMP, where no
    rebuild replaces the library under a test, with the musl build
    (build/musl/lib, build/musl/bin) only when MUSL: (its mwrap-attach,
    its libmwrap.so)."""
    tree = tmp / "tree"
    shutil.copytree(os.path.join(ROOT, "scripts"), tree / "scripts", symlinks=True)
    builds = ["lib", "bin"] + (["musl/lib", "musl/bin"] if musl else [])
    for b in builds:
        shutil.copytree(os.path.join(ROOT, "build", b), tree / "build" / b, symlinks=True)
    return str(tree / "scripts" / "mwrap-attach"), tree / "build" / "lib" / "libmwrap.so"
