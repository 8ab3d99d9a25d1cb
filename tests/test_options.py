# SPDX-License-Identifier: MIT
"""mwrap-attach's options are declared once (lib/mwrap_attach/options.rb):
the parser takes them from there, and each process of a fleet
(--children-of, -p 1,2) gets every option the declaration says it
should; the rest are the fleet's own, and listed here, so that a new
option has to say which it is."""
import json
import os
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast  # make test-fast

OPTIONS_RB = os.path.join(ROOT, "scripts", "lib", "mwrap_attach", "options.rb")

# the report, the pids and what a fleet refuses: never a child's
# (--every and its companions take one pid: test_serve.py)
FLEETS_OWN = {"--pid", "--output", "--force", "--format", "--keep", "--group", "--focus",
              "--watch", "--children-of", "--dump", "--stats", "--detach", "--check-gdb",
              "--every", "--serve", "--push", "--label", "--app"}

# each option given (a value where it takes one), what its child gets
PROBE = r"""
require "json"
require ARGV[0]
out = MwrapAttach::OPTIONS.map do |opt|
  o = { seconds: 30.0, backend: "ptrace", timeout: 10.0 }
  opt.set.call(o, opt.switches.last.include?(" ") || opt.switches.last.include?("[") ? "7" : true)
  { "name" => opt.name, "switches" => opt.switches.map { |s| s[/\A-[-\w]+/] },
    "fleet" => !opt.fleet.nil?, "args" => MwrapAttach.fleet_args(o, 4242) }
end
puts JSON.generate(out)
"""


def declared():
    p = subprocess.run(["ruby", "-e", PROBE, OPTIONS_RB], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_every_option_says_whether_a_fleet_child_gets_it():
    opts = declared()
    own = {o["name"] for o in opts if not o["fleet"]}
    assert own == FLEETS_OWN


def test_a_fleet_child_gets_every_option_it_should():
    for o in declared():
        if not o["fleet"]:
            continue
        assert any(a.split("=")[0] in o["switches"] for a in o["args"]), o


def test_same_seccomp_reaches_every_child():
    """The sidecar's case: --children-of with --same-seccomp."""
    o = next(x for x in declared() if x["name"] == "--same-seccomp")
    assert "--same-seccomp" in o["args"]


def test_the_usage_names_every_declared_option():
    help_text = subprocess.run([os.path.join(ROOT, "scripts", "mwrap-attach"), "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    for o in declared():
        # the usage names each one (-d as -d, the rest by their long name)
        assert any(s in help_text for s in o["switches"]), o["name"]


def man_synopsis():
    """man/mwrap-attach.1's SYNOPSIS as plain text, one line per form."""
    with open(os.path.join(ROOT, "man", "mwrap-attach.1")) as f:
        text = f.read()
    syn = text.split(".SH SYNOPSIS", 1)[1].split("\n.SH ", 1)[0]
    syn = syn.replace("\\-", "-").replace("\\fI", "").replace("\\fR", "").replace("\\fB", "")
    forms, cur = [], []
    for line in syn.splitlines():
        if line.startswith(".br"):
            forms.append(" ".join(cur))
            cur = []
        elif line.strip():
            cur.append(line.split(" ", 1)[1] if line.startswith(".") and " " in line else line)
    forms.append(" ".join(cur))
    return forms


def test_the_man_page_synopsis_names_every_declared_option():
    """Every option of the declaration is in the man page's synopsis,
    and --dump's form names what a dump takes (--format among them)."""
    forms = man_synopsis()
    text = " ".join(forms)
    for o in declared():
        assert any(s in text for s in o["switches"]), o["name"]
    dump = next(f for f in forms if "--dump " in f + " ")
    for opt in ("--gc", "--objects", "--scan", "-o", "--format"):
        assert opt in dump, (opt, dump)
