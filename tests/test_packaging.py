# SPDX-License-Identifier: MIT
"""The packages' descriptions stay in step with the tree (make
test-packages builds and installs them): the gem carries every source
the product is built from, and debian/changelog is at VERSION."""
import os
import subprocess

from conftest import ROOT

BUILD_OUTPUTS = (".o", ".d", ".so")


def version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        return f.read().strip()


def gem_spec(field):
    p = subprocess.run(["ruby", "-e", "s = Gem::Specification.load(ARGV[0]); "
                        f"puts s.{field}", "mwrap-attach.gemspec"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_the_gem_carries_every_source_of_the_product():
    files = set(gem_spec("files"))
    sources = {os.path.relpath(os.path.join(d, f), ROOT)
               for top in ("preload", "inject", "ruby-ext", "scripts/lib", "man")
               for d, _, names in os.walk(os.path.join(ROOT, top))
               for f in names if not f.endswith(BUILD_OUTPUTS)
               and not f.startswith("liburcu") and f != "mwrap-inject"}
    assert "preload/core/live.c" in sources and "inject/gdb/attach.py" in sources
    assert sorted(sources - files) == []
    assert {"Makefile", "VERSION", "scripts/mwrap", "scripts/mwrap-attach",
            "scripts/mwrap-report", "gem/extconf.rb"} <= files
    assert [f for f in files if not os.path.isfile(os.path.join(ROOT, f))] == []


def test_the_gem_and_the_changelog_are_at_version():
    assert gem_spec("version") == [version()]
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        first = f.readline()
    assert first.startswith(f"mwrap-attach ({version()}) "), first


def test_the_gems_executables_are_the_three_commands():
    assert sorted(gem_spec("executables")) == ["mwrap", "mwrap-attach", "mwrap-report"]
    for name in gem_spec("executables"):
        assert os.access(os.path.join(ROOT, "gem", "bin", name), os.X_OK)
