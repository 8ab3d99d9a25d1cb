# SPDX-License-Identifier: MIT
"""Exit codes come from one table (scripts/lib/mwrap_attach/exit_codes.rb;
mwrap-inject's from inject/base/exitcodes.h): --help prints it, the man pages'
EXIT STATUS sections say the same, no script exits with a number of its
own, and the commands exit with the table's numbers when they fail."""
import json
import os
import re
import subprocess

import pytest

from conftest import ATTACH, INJECT, MWRAP, ROOT, run

pytestmark = pytest.mark.fast  # make test-fast

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
SCRIPTS = os.path.join(ROOT, "scripts")


def table():
    """{command: [[number, name, meaning], ...]} as the front ends load it."""
    p = run(["ruby", "-rjson", "-I", os.path.join(SCRIPTS, "lib"), "-e",
             'require "mwrap_attach/exit_codes"; '
             "puts JSON.generate(MwrapAttach::EXIT_CODES)"])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def inject_table():
    p = run([INJECT, "--exit-codes"])
    assert p.returncode == 0, p.stderr
    return [[int(n), name, what] for name, n, what in
            (line.split(" ", 2) for line in p.stdout.splitlines())]


def help_codes(text):
    """The "exit codes:" block of a --help: [(number, meaning)], each
    meaning's wrapped lines joined."""
    block = text.split("exit codes:\n", 1)[1]
    codes = []
    for line in block.splitlines():
        m = re.match(r"^  ( {0,2}\d{1,3})  (\S.*)$", line)
        if line.startswith(" " * 7) and codes:
            codes[-1][1] += " " + line.strip()
        elif m:
            codes.append([int(m.group(1)), m.group(2)])
        else:
            break
    return [tuple(c) for c in codes]


def man_codes(command):
    """The EXIT STATUS section of man/COMMAND.1: [(number, meaning)]."""
    with open(os.path.join(ROOT, "man", f"{command}.1")) as f:
        page = f.read()
    section = re.search(r"^\.SH EXIT STATUS\n(.*?)^\.SH ", page, re.M | re.S).group(1)
    return [(int(n), what.replace("\\-", "-"))
            for n, what in re.findall(r"^\.TP\n(\d+)\n(.*)\n", section, re.M)]


def test_help_prints_the_table():
    codes = table()
    assert [c[1] for c in codes["mwrap-attach"]][:4] == ["ok", "internal", "usage", "no_such_process"]
    for command, exe in (("mwrap-attach", ATTACH), ("mwrap-report", REPORT)):
        p = run([exe, "--help"])
        assert p.returncode == 0, p.stderr
        assert help_codes(p.stdout) == [(n, what) for n, _, what in codes[command]]
    p = run([INJECT, "--help"])
    assert help_codes(p.stdout) == [(n, what) for n, _, what in inject_table()]


def test_the_man_pages_say_what_the_table_says():
    codes = dict(table(), **{"mwrap-inject": inject_table()})
    assert sorted(codes) == ["mwrap", "mwrap-attach", "mwrap-inject", "mwrap-report"]
    for command, rows in codes.items():
        assert man_codes(command) == [(n, what) for n, _, what in rows], command
    # and make man would change nothing
    p = run([os.path.join(ROOT, "dev", "man-exit-status"), "--check"])
    assert p.returncode == 0, p.stderr


def test_the_checker_names_a_stale_page(tmp):
    """man-exit-status --check fails on a page the table disagrees with."""
    copy = tmp / "tree"
    copy.mkdir()
    for d in ("scripts", "dev", "man", "inject"):
        subprocess.run(["cp", "-r", os.path.join(ROOT, d), str(copy / d)], check=True,
                       timeout=60)
    page = copy / "man" / "mwrap-report.1"
    page.write_text(page.read_text().replace("\n3\na dump cannot be read\n",
                                             "\n4\na dump cannot be read\n"))
    p = run([str(copy / "dev" / "man-exit-status"), "--check"])
    assert p.returncode == 1 and f"{page}: run make man" in p.stderr, p.stderr
    p = run([str(copy / "dev" / "man-exit-status")])
    assert p.returncode == 0 and man_codes_of(page)[-1] == (3, "a dump cannot be read")


def man_codes_of(page):
    section = re.search(r"^\.SH EXIT STATUS\n(.*?)^\.SH ", page.read_text(), re.M | re.S).group(1)
    return [(int(n), w) for n, w in re.findall(r"^\.TP\n(\d+)\n(.*)\n", section, re.M)]


def test_no_script_exits_with_a_number_of_its_own():
    """The Ruby front ends name their codes (EXIT[:name], REPORT_EXIT[:name]);
    every name they use is in the table."""
    files = [os.path.join(SCRIPTS, "mwrap-attach"), REPORT]
    lib = os.path.join(SCRIPTS, "lib", "mwrap_attach")
    files += [os.path.join(lib, f) for f in sorted(os.listdir(lib)) if f.endswith(".rb")]
    literal = re.compile(r"\bexit!?\(?\s*[1-9]|\bfail!\(\s*\d|\bfail_with\(\s*\d|Failure\.new\(\s*\d")
    names = {c[1] for c in table()["mwrap-attach"]}
    report_names = {c[1] for c in table()["mwrap-report"]}
    used = set()
    for path in files:
        with open(path) as f:
            text = f.read()
        assert not literal.search(text), (path, literal.search(text).group(0))
        used |= {(path, n) for n in re.findall(r"\bEXIT\[:(\w+)\]", text)}
        assert set(re.findall(r"\bREPORT_EXIT\[:(\w+)\]", text)) <= report_names, path
    assert len(used) > 20
    assert [(p, n) for p, n in sorted(used) if n not in names] == []


def test_the_commands_exit_with_the_tables_numbers(tmp):
    attach_codes = {c[1]: c[0] for c in table()["mwrap-attach"]}
    report_codes = {c[1]: c[0] for c in table()["mwrap-report"]}
    mwrap_codes = {c[1]: c[0] for c in table()["mwrap"]}
    assert run([ATTACH, "--no-such-option"]).returncode == attach_codes["usage"]
    gone = subprocess.Popen(["true"])
    gone.wait(timeout=30)
    p = run([ATTACH, "-p", str(gone.pid), "-d", "1"])
    assert p.returncode == attach_codes["no_such_process"], p.stderr
    assert run([REPORT, "--top"]).returncode == report_codes["usage"]
    p = run([REPORT, str(tmp / "missing.json")])
    assert p.returncode == report_codes["unreadable"] and "cannot read" in p.stderr
    assert run([MWRAP]).returncode == mwrap_codes["usage"]
    p = run([MWRAP, str(tmp / "no-such-command")])
    assert p.returncode == mwrap_codes["not_found"], p.stderr
