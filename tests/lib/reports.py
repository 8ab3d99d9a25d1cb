# SPDX-License-Identifier: MIT
"""mwrap-report's text report, read as its reader would."""
import re

SOURCE_LINE = re.compile(r"(/[^\s:()]+\.(?:rb|rsb|erb|ru|rake)):(\d+)")


def first_source_line(text):
    """The first "path:line" of Ruby source a report names, or None: what
    a reader meets first."""
    m = SOURCE_LINE.search(text)
    return f"{m.group(1)}:{m.group(2)}" if m else None


def site_rows(lines):
    """The rows of a text report's site table (innermost lines): the
    lines after its column header; the application table above it names
    the same locations with other columns."""
    for i, line in enumerate(lines):
        if "total_bytes" in line and line.rstrip().endswith("location"):
            return lines[i + 1:]
    return []


def site_value(lines, location, column):
    """COLUMN (a header's name, one of those before growth and location)
    of LOCATION's row in a text report's site table, as an int."""
    rows = site_rows(lines)
    header = lines[len(lines) - len(rows) - 1].split()
    row = next(l for l in rows if l.endswith(location))
    return int(row.split()[header.index(column)])


def first_site(text, *columns):
    """The first row of a text report's site table: the values of
    COLUMNS (headers' names, those before growth and location) as ints,
    then its location."""
    lines = text.splitlines()
    rows = site_rows(lines)
    header = lines[len(lines) - len(rows) - 1].split()
    row = rows[0].split()
    return (*(int(row[header.index(c)]) for c in columns), row[-1])


def sections(text):
    """'=== title ===' sections of a multi-process report."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("=== "):
            name = line.strip("= ")
            out[name] = []
        elif name:
            out[name].append(line)
    return out
