# SPDX-License-Identifier: MIT
"""The dump formats (docs/formats.md), parsed."""
import json
import re

DUMP_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s(.+)$")


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
    """JSON Lines dump -> (header, {location: site dict}); scan and
    objects records are left out."""
    header, sites = None, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj["type"] == "header":
            header = obj
        elif obj["type"] == "site":
            sites[obj["location"]] = obj
    return header, sites
