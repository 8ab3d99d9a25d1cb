# SPDX-License-Identifier: MIT
"""The packages' descriptions stay in step with the tree (make
test-packages builds and installs them): the gem carries every source
the product is built from, and debian/changelog is at VERSION.  And
`make install` (what the gem's and the .deb's builds call too): the FHS
layout under PREFIX, whose commands work from there."""
import os
import subprocess

import pytest

from conftest import (LEAK_RB, ROOT, during_window, parse_dump, ptrace_allowed,
                      run, site_rows, start_leak, start_ready)

BUILD_OUTPUTS = (".o", ".d", ".so")
# the musl build (make build-musl), and where make install puts it
MUSL_LIB = os.path.join(ROOT, "build", "musl", "lib", "libmwrap.so")
MUSL_CLEAK = os.path.join(ROOT, "build", "musl", "targets", "cleak")
MUSL_DIR = "lib/mwrap-attach/musl/"


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
               for top in ("common", "preload", "inject", "ruby-ext", "scripts/lib", "man")
               for d, _, names in os.walk(os.path.join(ROOT, top))
               for f in names if not f.endswith(BUILD_OUTPUTS)
               and not f.startswith("liburcu") and f != "mwrap-inject"}
    assert "preload/core/live.c" in sources and "inject/backends/gdb/attach.py" in sources
    assert sorted(sources - files) == []
    assert {"Makefile", "VERSION", "scripts/mwrap", "scripts/mwrap-attach",
            "scripts/mwrap-report", "gem/extconf.rb"} <= files
    assert [f for f in files if not os.path.isfile(os.path.join(ROOT, f))] == []


def test_the_gem_carries_the_musl_build_where_it_was_made():
    """A glibc system cannot build for musl at install: the gem carries
    the musl build (with liburcu's licence) where make build-musl made
    it, and nothing of it where not."""
    musl = sorted(f for f in gem_spec("files") if f.startswith("build/"))
    assert musl == ([] if not os.path.exists(MUSL_LIB) else
                    ["build/musl/bin/mwrap-inject", "build/musl/lib/libmwrap.so",
                     "build/musl/lib/liburcu-LICENSE", "build/musl/lib/liburcu-bp.so.8",
                     "build/musl/lib/liburcu-cds.so.8", "build/musl/lib/liburcu-common.so.8"])


@pytest.mark.skipif(not os.path.exists(MUSL_LIB), reason="no musl build here")
@pytest.mark.parametrize("target,packs", [("gem", "gem build"),
                                          ("deb", "dpkg-buildpackage")])
def test_the_packages_make_the_musl_build_again_first(target, packs):
    """Where make build-musl made it, make gem and make deb bring it up
    to date before they pack it (a stale one would ship): make -n shows
    the order."""
    p = subprocess.run(["make", "-n", "-C", ROOT, target], text=True,
                       capture_output=True, timeout=120)
    lines = p.stdout.splitlines()
    built = [i for i, l in enumerate(lines)
             if "build/musl/lib/libmwrap.so" in l and "make" in l]
    packed = [i for i, l in enumerate(lines) if packs in l]
    assert built and packed and built[0] < packed[0], p.stdout + p.stderr


def test_the_gem_and_the_changelog_are_at_version():
    assert gem_spec("version") == [version()]
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        first = f.readline()
    assert first.startswith(f"mwrap-attach ({version()}) "), first


def test_the_gems_executables_are_the_three_commands():
    assert sorted(gem_spec("executables")) == ["mwrap", "mwrap-attach", "mwrap-report"]
    for name in gem_spec("executables"):
        assert os.access(os.path.join(ROOT, "gem", "bin", name), os.X_OK)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """make install-product (make install without apt-get) into a DESTDIR
    with PREFIX=/opt/mwrap: (DESTDIR, PREFIX inside it, ruby's site
    directories inside it)."""
    dest = tmp_path_factory.mktemp("install") / "dest"
    p = run(["make", "-s", "-C", ROOT, "install-product", f"DESTDIR={dest}",
             "PREFIX=/opt/mwrap"], timeout=300)
    assert p.returncode == 0, p.stderr
    site = run(["ruby", "-e", 'print RbConfig::CONFIG["sitelibdir"], " ", '
                'RbConfig::CONFIG["sitearchdir"]']).stdout.split()
    return dest, dest / "opt/mwrap", [f"{dest}{d}" for d in site]


def test_make_install_lays_the_files_out_by_the_fhs(installed):
    dest, prefix, (sitelib, sitearch) = installed
    files = sorted(os.path.relpath(os.path.join(d, f), prefix)
                   for d, _, names in os.walk(prefix) for f in names)
    assert [f for f in files if f.startswith("bin/")] == [
        "bin/mwrap", "bin/mwrap-attach", "bin/mwrap-report"]
    assert os.readlink(prefix / "bin/mwrap-attach") == "../share/mwrap-attach/mwrap-attach"
    assert os.readlink(prefix / "bin/mwrap-report") == "../share/mwrap-attach/mwrap-report"
    lib = sorted(f for f in files if f.startswith("lib/") and not f.startswith(MUSL_DIR))
    assert lib[:2] == ["lib/mwrap-attach/libmwrap.so", "lib/mwrap-attach/liburcu-bp.so.8"]
    assert lib[2:] == ["lib/mwrap-attach/liburcu-cds.so.8", "lib/mwrap-attach/mwrap-inject"]
    assert os.access(prefix / "lib/mwrap-attach/mwrap-inject", os.X_OK)
    # the musl build, with the three liburcu files it needs, when made
    musl = sorted(os.path.relpath(f, MUSL_DIR) for f in files if f.startswith(MUSL_DIR))
    assert musl == ([] if not os.path.exists(MUSL_LIB) else
                    ["libmwrap.so", "liburcu-LICENSE", "liburcu-bp.so.8",
                     "liburcu-cds.so.8", "liburcu-common.so.8", "mwrap-inject"])
    assert sorted(f for f in files if f.startswith("share/man/")) == [
        f"share/man/man1/{p}" for p in
        ("mwrap-attach.1", "mwrap-inject.1", "mwrap-report.1", "mwrap.1")]
    libs = sorted(os.listdir(os.path.join(ROOT, "scripts/lib/mwrap_attach")))
    assert "exit_codes.rb" in libs
    assert sorted(os.listdir(prefix / "share/mwrap-attach/lib/mwrap_attach")) == libs
    # a Ruby built from source keeps its sitearchdir inside its sitelibdir
    # (3.4.3: site_ruby/3.4.0/x86_64-linux), Debian's apart
    assert sorted(f for f in os.listdir(sitelib)
                  if os.path.join(sitelib, f) != sitearch) == ["mwrap.rb", "mwrap_rack.rb"]
    assert os.listdir(sitearch) == ["mwrap_ext.so"]
    # nothing outside PREFIX but ruby's site directories
    outside = {os.path.join(d, f) for d, _, names in os.walk(dest) for f in names
               if not os.path.join(d, f).startswith((str(prefix), sitelib, sitearch))}
    assert outside == set()


def test_the_installed_commands_run_from_there(installed, tmp):
    """The installed mwrap preloads the installed library (whose liburcu is
    the copy beside it) and traces a Ruby line; the Mwrap API loads from
    ruby's site directories; --version reads the installed VERSION."""
    dest, prefix, (sitelib, sitearch) = installed
    for name in ("mwrap", "mwrap-attach", "mwrap-report"):
        p = run([str(prefix / "bin" / name), "--version"])
        assert p.returncode == 0 and p.stdout == f"{name} {version()}\n", (name, p.stderr)
    script = tmp / "t.rb"
    script.write_text("require 'mwrap'\n"
                      "KEEP = Array.new(100) { 'x' * 10_000 }\n"
                      "p Mwrap::VERSION\n")
    dump = tmp / "t.dump"
    p = run([str(prefix / "bin/mwrap"), "ruby", "-I", sitelib, "-I", sitearch, str(script)],
            env={"MWRAP": f"dump_path:{dump}"})
    assert p.returncode == 0 and p.stdout == f'"{version()}"\n', p.stderr
    total, calls = parse_dump(dump.read_text())[f"{script}:2"]
    assert calls >= 100 and 100 * 10_000 <= total <= 100 * 10_000 + 100 * 64
    maps = run([str(prefix / "bin/mwrap"), "cat", "/proc/self/maps"]).stdout
    assert f"{prefix}/lib/mwrap-attach/libmwrap.so" in maps
    assert f"{prefix}/lib/mwrap-attach/liburcu-bp.so.8" in maps


def test_the_installed_mwrap_attach_attaches(installed, spawn):
    """The installed front end finds the installed injector and library
    and names the leaking line of a live Ruby service."""
    why = ptrace_allowed()
    if why:
        pytest.skip(why)
    dest, prefix, _ = installed
    t, leak_line, _ = start_leak(spawn)

    def leak():
        t.send("leak 200 5000")
        t.expect("leaked 200")
    code, out, err = during_window([str(prefix / "bin/mwrap-attach"), "-p", str(t.pid),
                                    "-d", "3"], t.pid, leak)
    assert code == 0, err
    row = next(line for line in site_rows(out.splitlines()) if line.endswith(f"{LEAK_RB}:{leak_line}"))
    live = int(row.split()[0])
    assert 200 * 5000 <= live <= 200 * 5000 + 200 * 64, row
    assert f"{prefix}/lib/mwrap-attach/libmwrap.so" in open(f"/proc/{t.pid}/maps").read()


def test_make_names_a_missing_liburcu_and_its_fix():
    """Plain `make` installs nothing: without liburcu's headers (here a
    compiler that finds none) it says which package and how to get it."""
    p = subprocess.run(["make", "--no-print-directory", "-B", "build/.build-deps", "CC=false"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "liburcu's headers are missing (Debian: liburcu-dev)" in p.stderr
    assert "make setup" in p.stderr


@pytest.mark.skipif(not (os.path.exists(MUSL_LIB) and os.path.exists(MUSL_CLEAK)),
                    reason="no musl build: make build-musl")
def test_the_installed_commands_load_the_musl_build_into_a_musl_program(installed, spawn, tmp):
    """The installed mwrap preloads, and the installed mwrap-attach
    loads, lib/mwrap-attach/musl/libmwrap.so into a musl program."""
    why = ptrace_allowed()
    if why:
        pytest.skip(why)
    dest, prefix, _ = installed
    musl_lib = f"{prefix}/{MUSL_DIR}libmwrap.so"
    dump = tmp / "exit.dump"
    t, _ = start_ready(spawn, [str(prefix / "bin/mwrap"), MUSL_CLEAK], env={"MWRAP": f"dump_path:{dump}"})
    assert musl_lib in open(f"/proc/{t.pid}/maps").read()
    t.send("leak 10 1000")
    t.expect("leaked 10")
    assert t.finish()[0] == 0
    assert any("(leak_here+0x" in loc for loc in parse_dump(dump.read_text()))
    t, _ = start_ready(spawn, [MUSL_CLEAK])
    code, _, err = during_window([str(prefix / "bin/mwrap-attach"), "-p", str(t.pid), "-d", "1"],
                                 t.pid, lambda: None)
    assert code == 0, err
    assert musl_lib in open(f"/proc/{t.pid}/maps").read()
