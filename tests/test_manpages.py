# SPDX-License-Identifier: MIT
"""The man pages and --version: every option that
mwrap-attach --help and mwrap --help name is in its man page, every
MWRAP= key the library parses is documented, and --version prints the
one VERSION file's contents instead of running a command named
--version."""
import glob
import os
import re
import subprocess

import pytest

from conftest import ATTACH, INJECT, MWRAP, ROOT

pytestmark = pytest.mark.fast  # make test-fast


def text_of(page):
    with open(os.path.join(ROOT, "man", page)) as f:
        return f.read().replace("\\-", "-")


def version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        return f.read().strip()


def test_every_mwrap_attach_option_is_in_its_man_page():
    usage = subprocess.run([ATTACH, "--help"], capture_output=True,
                           text=True, timeout=30).stdout
    options = set(re.findall(r"(--[a-z][a-z-]+)", usage))
    assert {"--children-of", "--keep", "--format"} <= options
    page = text_of("mwrap-attach.1")
    assert [o for o in sorted(options) if o not in page] == []
    # (the exit codes: tests/test_exit_codes.py)


def test_every_mwrap_report_option_is_in_its_man_page():
    usage = subprocess.run([os.path.join(ROOT, "scripts", "mwrap-report"), "--help"],
                           capture_output=True, text=True, timeout=30).stdout
    options = set(re.findall(r"(--[a-z][a-z-]+)", usage))
    assert {"--focus", "--diff", "--version", "--force"} <= options
    page = text_of("mwrap-report.1")
    assert [o for o in sorted(options) if o not in page] == []


PAGES = ("mwrap-attach.1", "mwrap.1", "mwrap-report.1", "mwrap-inject.1")
MAN_ENV = {**os.environ, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80"}


def man(*args):
    return subprocess.run(["man", *args], capture_output=True, text=True,
                          timeout=60, env=MAN_ENV)


def test_each_command_has_a_page_man_reads_from_the_tree():
    """man -l reads each command's page as it is in the source tree, with
    its name, synopsis and exit status, and no warning from groff."""
    assert sorted(os.listdir(os.path.join(ROOT, "man"))) == sorted(PAGES)
    for page in PAGES:
        p = man("-l", os.path.join(ROOT, "man", page))
        name = page[:-2]
        assert p.returncode == 0, (page, p.stderr)
        assert p.stderr == "", (page, p.stderr)
        assert p.stdout.startswith(f"{name.upper()}(1)"), (page, p.stdout[:80])
        # groff 1.23 (Debian 13) justifies a NAME line that wraps: "name  - "
        assert re.search(rf"NAME\n +{re.escape(name)} +- ", p.stdout), page
        for section in ("SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"):
            assert f"\n{section}\n" in p.stdout, (page, section)


def test_make_install_installs_the_pages(tmp_path):
    """make install puts the four pages under share/man/man1, where man
    finds them by name (MANPATH set to the installed tree)."""
    dest = tmp_path / "dest"
    p = subprocess.run(["make", "-s", "-C", ROOT, "install-product",
                        f"DESTDIR={dest}", "PREFIX=/usr/local"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    mandir = dest / "usr/local/share/man"
    assert sorted(os.listdir(mandir / "man1")) == sorted(PAGES)
    for page in PAGES:
        with open(os.path.join(ROOT, "man", page)) as f:
            assert (mandir / "man1" / page).read_text() == f.read()
        assert oct((mandir / "man1" / page).stat().st_mode & 0o777) == "0o644"
        q = man("-M", str(mandir), page[:-2])
        assert q.returncode == 0 and q.stdout.startswith(f"{page[:-2].upper()}(1)"), \
            (page, q.stderr)


def test_every_mwrap_inject_option_is_in_its_man_page():
    usage = subprocess.run([INJECT, "--help"], capture_output=True,
                           text=True, timeout=30).stdout
    options = set(re.findall(r"(--[a-z][a-z-]+)", usage))
    assert {"--backend", "--timeout", "--check-seccomp", "--exit-codes"} <= options
    page = text_of("mwrap-inject.1")
    assert [o for o in sorted(options) if o not in page] == []


def test_mwrap_report_version_and_no_overwrite(tmp_path):
    report = os.path.join(ROOT, "scripts", "mwrap-report")
    p = subprocess.run([report, "--version"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == f"mwrap-report {version()}\n"
    dump = tmp_path / "d.txt"
    dump.write_text("100 1 a.rb:1\n")
    out = tmp_path / "out.txt"
    out.write_text("keep me")
    p = subprocess.run([report, "-o", str(out), str(dump)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "exists" in p.stderr and out.read_text() == "keep me"
    p = subprocess.run([report, "-o", str(out), "--force", str(dump)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "a.rb:1" in out.read_text()


def test_every_mwrap_key_is_documented():
    header, = glob.glob(os.path.join(ROOT, "preload", "**", "options.h"),
                        recursive=True)
    with open(header) as f:
        # keys for the attach only (lease) are not mwrap's
        keys = {k for k, rest in re.findall(r"^ \*   ([a-z_]+):(.*)", f.read(),
                                            re.M) if "attach only" not in rest}
    assert {"dump_path", "dump_fd", "sample"} <= keys
    usage = subprocess.run([MWRAP, "--help"], capture_output=True,
                           text=True, timeout=30).stdout
    page = text_of("mwrap.1")
    assert [k for k in sorted(keys) if f"{k}:" not in usage] == []
    assert [k for k in sorted(keys) if k not in page] == []


def test_mwrap_version():
    p = subprocess.run([MWRAP, "--version"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0 and p.stdout == f"mwrap {version()}\n"


def test_mwrap_attach_version():
    p = subprocess.run([ATTACH, "--version"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0 and p.stdout == f"mwrap-attach {version()}\n"


def test_a_bare_pid_gets_the_fix():
    p = subprocess.run([ATTACH, "31491"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2
    assert "mwrap-attach -p 31491" in p.stderr, p.stderr
