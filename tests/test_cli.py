# SPDX-License-Identifier: MIT
"""CLI papercuts: -o refuses to overwrite without
--force and says where it wrote; a report that cannot be written after the
window goes to stdout with an exit code of its own (15); a static binary
gets one line of cause and one of fix (kernel threads and zombies: in
safety/test_bad_input.py); and MWRAP=dump_fd:1 writes the dump after the
program's own buffered stdout."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import (ATTACH, MWRAP, ROOT, TARGETS, attach, during_window, is_attached,
                      needs_ptrace, run)

IO_EXIT = 15


def ruby_internals(text):
    """Traces of Ruby's own error reporting: exception class names,
    backtraces, the " @ io_write - " of a raw Errno message."""
    return re.search(r"Errno::|\(\w+Error\)|\.rb:\d+:in |from /| @ \w+", text)


def no_trace_of_attach(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libmwrap" not in f.read() and not is_attached(pid)


# --- -o FILE ---------------------------------------------------------------

@needs_ptrace
def test_o_refuses_an_existing_file_before_attaching(spawn, tmp):
    t = spawn(["sleep", "60"])
    out = tmp / "report.txt"
    out.write_text("keep me\n")
    p = attach(["-p", str(t.pid), "-d", "0.5", "-o", str(out)])
    assert p.returncode == 2, p.stderr
    assert p.stderr == (f"mwrap-attach: {out} exists; not overwriting it\n"
                        "mwrap-attach: add --force to overwrite it, or name another file\n")
    assert out.read_text() == "keep me\n"
    assert no_trace_of_attach(t.pid)       # refused before touching it


@needs_ptrace
def test_o_force_overwrites_and_says_where_it_wrote(spawn, tmp):
    t = spawn(["sleep", "60"])
    out = tmp / "report.txt"
    out.write_text("old\n")
    p = attach(["-p", str(t.pid), "-d", "0.5", "-o", str(out), "--force"])
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[-1] == f"mwrap-attach: wrote {out}"
    assert out.read_text().startswith("mwrap report: pid ")
    assert p.stdout == ""
    fresh = tmp / "new.json"
    p = attach(["-p", str(t.pid), "-d", "0.5", "-o", str(fresh), "--format", "json"])
    assert p.returncode == 0, p.stderr
    assert f"mwrap-attach: wrote {fresh}\n" in p.stderr
    assert fresh.read_text().startswith('{"type":"header"')


@needs_ptrace
def test_o_does_not_overwrite_a_file_made_during_the_window(spawn, tmp):
    t = spawn(["sleep", "60"])
    out = tmp / "report.txt"
    rc, stdout, stderr = during_window([ATTACH, "-p", str(t.pid), "-d", "2", "-o", str(out)],
                                       t.pid, lambda: out.write_text("theirs\n"))
    assert rc == IO_EXIT, stderr
    assert out.read_text() == "theirs\n"
    assert stdout.startswith("mwrap report: pid ")
    assert stderr.endswith(f"mwrap-attach: cannot write {out}: it appeared during the window "
                           "(add --force to overwrite it)\n"
                           "mwrap-attach: the report is on stdout instead\n")


@needs_ptrace
def test_several_pids_say_wrote_once_for_the_merged_report(spawn, tmp):
    a, b = spawn(["sleep", "60"]), spawn(["sleep", "60"])
    out = tmp / "fleet.txt"
    p = attach(["-p", f"{a.pid},{b.pid}", "-d", "0.5", "-o", str(out)], timeout=90)
    assert p.returncode == 0, p.stderr
    # each process's own run writes a scratch file: not the user's news
    assert [l for l in p.stderr.splitlines() if "wrote" in l] == [f"mwrap-attach: wrote {out}"]
    assert "=== merged view of 2 of 2 processes ===" in out.read_text()


@needs_ptrace
def test_a_report_that_cannot_be_written_goes_to_stdout(spawn):
    t = spawn(["sleep", "60"])
    p = attach(["-p", str(t.pid), "-d", "0.5", "-o", "/dev/full"])
    assert p.returncode == IO_EXIT, p.stderr
    assert p.stdout.startswith("mwrap report: pid ")
    assert "ranked by live bytes" in p.stdout
    assert p.stderr.endswith("mwrap-attach: cannot write /dev/full: No space left on device\n"
                             "mwrap-attach: the report is on stdout instead\n")
    assert not ruby_internals(p.stderr), p.stderr
    assert "wrote" not in p.stderr


@needs_ptrace
def test_a_report_that_cannot_go_to_stdout_says_so(spawn):
    t = spawn(["sleep", "60"])
    with open("/dev/full", "w") as full:
        p = subprocess.run([ATTACH, "-p", str(t.pid), "-d", "0.5"], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == IO_EXIT, p.stderr
    assert p.stderr.endswith("mwrap-attach: cannot write the report to stdout: No space left on device\n"
                             "mwrap-attach: write it to a file with -o FILE\n")
    assert not ruby_internals(p.stderr), p.stderr


def test_the_io_exit_code_is_documented():
    """(the table's agreement with --help and the man page:
    tests/test_exit_codes.py)"""
    assert IO_EXIT == 15
    help_text = attach(["--help"]).stdout
    assert "\n   15  the report could not be written (-o FILE: it went to stdout" in help_text
    with open(os.path.join(ROOT, "man", "mwrap-attach.1")) as f:
        assert "\n.TP\n15\nthe report could not be written" in f.read()


# --- targets that cannot be attached ----------------------------------------

@needs_ptrace
def test_a_static_binary_gets_its_cause_and_fix(spawn, tmp):
    src = tmp / "static.c"
    src.write_text("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
    exe = tmp / "static"
    cc = run(["cc", "-static", "-o", str(exe), str(src)])
    if cc.returncode:
        pytest.skip(f"cannot link statically here: {cc.stderr.strip()[:200]}")
    t = spawn([str(exe)])
    p = attach(["-p", str(t.pid), "-d", "1"])
    assert p.returncode == 8, p.stderr
    assert p.stderr == (f"mwrap-attach: process {t.pid} is statically linked ({exe}): "
                        "it has no dynamic loader, so no library can be loaded into it\n"
                        "mwrap-attach: neither mwrap-attach nor mwrap (LD_PRELOAD) can trace it: "
                        "rebuild it dynamically linked (without -static)\n")
    assert "readable" not in p.stderr
    assert no_trace_of_attach(t.pid)


# --- MWRAP=dump_fd:1 ---------------------------------------------------------

DUMP_HEADER = "# mwrap-attach "
DUMP_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S")


def split_at_dump(stdout):
    """(the program's lines, the dump's lines): the dump starts at its
    header line and every line after it must be the dump's."""
    lines = stdout.splitlines()
    heads = [i for i, l in enumerate(lines) if l.startswith(DUMP_HEADER)]
    assert len(heads) == 1, lines[:5]
    return lines[:heads[0]], lines[heads[0]:]


def test_dump_fd_1_comes_after_the_programs_buffered_stdout():
    # hello prints one line with printf into a pipe (fully buffered, not
    # flushed before exit)
    p = run([MWRAP, os.path.join(TARGETS, "hello")], env={"MWRAP": "dump_fd:1"})
    assert p.returncode == 0, p.stderr
    mine, dump = split_at_dump(p.stdout)
    assert mine == ["HELLO_FROM_C 1 enomem=1"]
    assert all(DUMP_ROW.match(l) for l in dump[1:]), dump
    assert any("leak_here" in l for l in dump)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_dump_fd_1_after_cmake_help():
    plain = run(["cmake", "-h"])
    p = run([MWRAP, "cmake", "-h"], env={"MWRAP": "dump_fd:1"})
    assert p.returncode == 0, p.stderr
    mine, dump = split_at_dump(p.stdout)
    assert mine == plain.stdout.splitlines()
    assert len(dump) > 1 and all(DUMP_ROW.match(l) for l in dump[1:]), dump[:5]
