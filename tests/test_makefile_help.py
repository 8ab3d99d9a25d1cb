# SPDX-License-Identifier: MIT
"""`make help` lists every target of the Makefile: each
rule a user can name (no path, no pattern, no variable) and each .PHONY
name is on a line of its own as `make TARGET`, and every `make TARGET`
it names is a target."""
import os
import re
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast  # make test-fast

# a rule's line: targets, then ":" or "::", not ":=" (an assignment)
RULE = re.compile(r"^([^\s#=:][^#=:]*?)\s*::?(?!=)")
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def makefile_targets():
    """The names a user runs: rules' targets without a path, a pattern
    or a variable, and the .PHONY list."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    targets = set()
    for line in text.splitlines():
        if line.startswith(".PHONY:"):
            targets.update(line.split(":", 1)[1].split())
            continue
        m = RULE.match(line)
        if m:
            targets.update(t for t in m.group(1).split() if NAME.match(t))
    return targets


def help_targets():
    p = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    named = set()
    for line in p.stdout.splitlines():
        # "make X  what", "make, make all  what": the names before the text
        head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        named.update(re.findall(r"\bmake ([a-z][a-z0-9-]*)", head))
        if head == "make" or head.startswith("make,"):
            named.add("all")
    return named


def test_the_parser_finds_the_targets():
    targets = makefile_targets()
    # a few of each kind: the default, a file-less rule, a PHONY-only name
    assert {"all", "help", "test", "test-fast", "install-product"} <= targets
    assert not any("/" in t or "%" in t or "$" in t for t in targets)


def test_make_help_names_every_target():
    missing = sorted(makefile_targets() - help_targets())
    assert not missing, "make help does not name: " + ", ".join(missing)


def test_make_help_names_only_targets():
    unknown = sorted(help_targets() - makefile_targets())
    assert not unknown, "make help names what is no target: " + ", ".join(unknown)
