# SPDX-License-Identifier: MIT
"""libmwrap.so on the CPU at hand (x86-64 on the host, aarch64 in the VM of
dev/arm64-vm, make test-arm64): preloaded (`mwrap ruby`), it names a
Fiddle leak's line with its exact bytes; attached to a live Ruby process
(`mwrap-attach -p PID -d SECONDS`) with the native backend and with gdb,
it names the line that leaked during the window with its bytes, then
detaches (no tracer, no runtime directory left) and the process runs on
and exits 0 with its data intact.

Deadlines scale with MWRAP_TEST_SLOW (the guest's job sets it: TCG runs
20-40x slower than the host)."""
import platform
import shutil
import subprocess
import time

import pytest

from conftest import (ATTACH, LEAK_RB, LINE_SLACK, MWRAP, fiddle_leak,
                      helper_answered, scaled as t, tracer_of,
                      is_attached, parse_json_dump, ptrace_allowed,
                      ruby_lacks, run, skip_unless_gdb_works, start_ready)




@pytest.mark.skipif(ruby_lacks("fiddle") is not None,
                    reason=str(ruby_lacks("fiddle")))
def test_preloaded_names_the_fiddle_leak_line(tmp_path):
    """100,000 x Fiddle.malloc(1024) on one line, half freed (as
    tests/test_preload.py's case)."""
    text, line = fiddle_leak()
    script = tmp_path / "leak.rb"
    script.write_text(text + 'puts "leaked"\n')
    path = tmp_path / "leak.json"
    p = run([MWRAP, "ruby", str(script)],
            env={"MWRAP": f"dump_path:{path},dump_format:json"},
            timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "leaked\n"
    header, sites = parse_json_dump(path.read_text())
    assert header["pid"] > 0 and header["age_unit"] == "gc_generations"
    site = sites[f"{script}:{line}"]
    # plus at most 50 small ones Ruby makes on the line (method caches,
    # the GC's mark-stack chunks)
    extra = 50 * 4096
    assert 100_000 <= site["allocations"] <= 100_050
    assert 102_400_000 <= site["total_bytes"] <= 102_400_000 + extra
    assert 50_000 <= site["frees"] <= 50_050
    assert 51_200_000 <= site["live_bytes"] <= 51_200_000 + extra


@pytest.mark.skipif(ptrace_allowed() is not None,
                    reason=str(ptrace_allowed()))
@pytest.mark.parametrize("backend", ["ptrace", "gdb"])
def test_attach_names_the_leaking_line_and_detaches(spawn, tmp_path,
                                                    backend):
    """tests/targets/leak.rb keeps 200 strings of 10,000 bytes during a
    window: the report's first site is their line, with their bytes."""
    if backend == "gdb":
        if shutil.which("gdb") is None:
            pytest.skip("gdb not installed")
        if platform.machine() == "x86_64":
            skip_unless_gdb_works()
    target, fields = start_ready(spawn, ["ruby", LEAK_RB])
    line = int(fields["leak_line"])
    out = tmp_path / "window.json"
    window = max(3, t(0.2))
    argv = [ATTACH, "-p", str(target.pid), "-d", str(window),
            "--format=json", "-o", str(out), "--backend=" + backend,
            "--timeout", str(int(t(10)))]
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # gdb's own check of itself comes first (two probes)
        deadline = time.monotonic() + t(6)
        while not helper_answered(target.pid) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        attached_in = time.monotonic() - started
        assert proc.poll() is None, proc.communicate()
        target.send("leak 200 10000")
        target.expect("leaked", timeout=2)
        stdout, stderr = proc.communicate(timeout=window + t(6))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=t(10))
    assert proc.returncode == 0, (stdout, stderr)
    header, sites = parse_json_dump(out.read_text())
    assert header["pid"] == target.pid
    first = next(l for l in out.read_text().splitlines()[1:]
                 if '"type":"site"' in l)
    assert f'"location":"{LEAK_RB}:{line}"' in first, (first, attached_in)
    site = sites[f"{LEAK_RB}:{line}"]
    # each string's buffer is 10,000 bytes with its NUL; KEEP's array
    # grows on the same line (a few more, small)
    assert 200 <= site["allocations"] <= 205 + LINE_SLACK
    assert 2_000_000 <= site["live_bytes"] <= 2_000_000 + 20_000
    # detached: no tracer, no helper, and the process carries on
    assert tracer_of(target.pid) == 0
    assert not is_attached(target.pid)
    target.send("leak 1 100")
    target.expect("leaked", timeout=2)
    rc, rest, _ = target.finish(timeout=2)
    assert rc == 0 and rest == ["bye %d" % (200 * 9999 + 99)]
