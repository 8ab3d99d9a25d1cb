# SPDX-License-Identifier: MIT
"""The container case without a Docker engine: a target in its own
mount and pid namespaces whose root is a minimal chroot built here, with
Ruby and its libraries but neither libmwrap.so nor liburcu, attached from
outside."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, attach, parse_json_dump, ptrace_allowed, run

pytestmark = pytest.mark.skipif(ptrace_allowed() is not None,
                                reason="ptrace not permitted")


def build_root(root):
    """Copies ruby and the libraries it links into @root."""
    ruby = os.path.realpath(shutil.which("ruby"))
    ldd = subprocess.run(["ldd", ruby], capture_output=True, text=True,
                         check=True).stdout.split()
    files = [ruby] + [w for w in ldd if w.startswith("/")]
    for f in files:
        dest = root / f.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(f), dest)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(ruby, root / "usr/bin/ruby")
    (root / "tmp").mkdir(mode=0o1777)
    os.chmod(root / "tmp", 0o1777)
    shutil.copy(os.path.join(ROOT, "tests", "targets", "leak.rb"),
                root / "tmp/leak.rb")


def test_minimal_root_without_libmwrap_or_liburcu(spawn, tmp):
    probe = run(["unshare", "--mount", "--pid", "--fork", "true"])
    if probe.returncode != 0:
        pytest.skip(f"unshare not permitted here: {probe.stderr.strip()}")
    root = tmp / "root"
    build_root(root)
    assert not list(root.rglob("liburcu*")) and not list(root.rglob("libmwrap*"))
    t = spawn(["unshare", "--mount", "--pid", "--fork", "chroot", str(root),
               "/usr/bin/ruby", "--disable=gems", "/tmp/leak.rb"])
    ready = t.expect("ready")
    assert ready.split()[1] == "1"
    line = int(ready.split()[2].split("=")[1])
    pid = int(open(f"/proc/{t.pid}/task/{t.pid}/children").read().split()[0])
    p = attach(["-p", str(pid), "--keep", "-v"])
    assert p.returncode == 0, p.stderr
    assert "copied the library" in p.stderr
    (staged,) = [d for d in os.listdir(root / "tmp") if d.startswith("mwrap-lib.")]
    copied = sorted(os.listdir(root / "tmp" / staged))
    assert "libmwrap.so" in copied and any(f.startswith("liburcu-bp") for f in copied)
    t.send("leak 300 6000")
    t.expect("leaked")
    p = attach(["-p", str(pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    _, sites = parse_json_dump(p.stdout)
    site = sites[f"/tmp/leak.rb:{line}"]
    assert 300 <= site["allocations"] <= 305 and site["live_bytes"] >= 300 * 6000
    assert attach(["-p", str(pid), "--detach"]).returncode == 0
    rc, rest, _ = t.finish()
    assert rc == 0 and rest == [f"bye {300 * 5999}"]
