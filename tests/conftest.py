"""Shared helpers: paths, bounded process runs, dump parsing."""
import json
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "preload", "libmwrap.so")
MWRAP = os.path.join(ROOT, "scripts", "mwrap")
TARGETS = os.path.join(ROOT, "build", "targets")
TIMEOUT = 60

DUMP_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s(.+)$")


def run(cmd, env=None, timeout=TIMEOUT, **kw):
    """Runs cmd to completion (killed after timeout), capturing output."""
    full_env = dict(os.environ)
    full_env.pop("MWRAP", None)
    full_env.pop("LD_PRELOAD", None)
    full_env.update(env or {})
    return subprocess.run(cmd, env=full_env, timeout=timeout,
                          capture_output=True, text=True, **kw)


def parse_dump(text):
    """mwrap's three-column dump -> {location: (total_bytes, calls)}.

    A location seen twice (dumps appended to one file) keeps the last.
    """
    sites = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = DUMP_LINE.match(line)
        if m:
            sites[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return sites


def parse_json_dump(text):
    """JSON Lines dump -> (header, {location: site dict})."""
    header, sites = None, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj["type"] == "header":
            header = obj
        else:
            sites[obj["location"]] = obj
    return header, sites


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
