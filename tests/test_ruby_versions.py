# SPDX-License-Identifier: MIT
"""Ruby locations on every Ruby we run on (3.1's frame reads, 3.2+'s
profiling API) and under YJIT, which does not always keep a frame's pc
current: each big allocation must land on its own line, exactly."""
import subprocess

import pytest

from conftest import MWRAP, parse_dump, run

N = 2000
# Lines 5, 7 and 10 allocate 100,001, 200,001 and 300,001 bytes (the
# string and its NUL); the calls between them are compiled by YJIT too.
SCRIPT = f"""\
def noop(x) = x
def work(i)
  s = nil
  noop(i)
  s = "a" * 100_000
  noop(s.size)
  t = "b" * 200_000
  noop(i + 1)
  [i].each do |j|
    u = "c" * 300_000
    noop(u)
  end
  [s, t]
end
{N}.times {{ |i| work(i) }}
jit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
puts(jit ? "done yjit" : "done")
"""


def ruby_has_yjit():
    # a ruby built without YJIT accepts --yjit with a warning
    code = "exit(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? 0 : 1)"
    try:
        p = subprocess.run(["ruby", "--yjit", "-e", code], timeout=30,
                           capture_output=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


def lines_of(tmp, ruby_args, expect="done\n"):
    script = tmp / "lines.rb"
    script.write_text(SCRIPT)
    p = run([MWRAP, "ruby"] + ruby_args + [str(script)],
            env={"MWRAP": "dump_fd:2,dump_min:90000"}, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expect
    dump = p.stderr[p.stderr.find("#"):] if "#" in p.stderr else p.stderr
    sites = parse_dump(dump)
    return script, sites


def check_exact(script, sites):
    want = {5: 100_001, 7: 200_001, 10: 300_001}
    for line, size in want.items():
        total, calls = sites.get(f"{script}:{line}", (0, 0))
        # plus a few small allocations of the line's own (method
        # caches, the block's array): far below one big string
        assert N <= calls <= N + 100, (line, sites)
        assert N * size <= total <= N * size + 65536, (line, sites)
    # no other line of the script holds 90 kB (dump_min): a stale pc
    # would have moved big strings there (and short the lines above)
    for name in sites:
        if name.startswith(f"{script}:"):
            assert int(name.rsplit(":", 1)[1]) in want, (name, sites)


def test_lines_exact_interpreted(tmp):
    check_exact(*lines_of(tmp, []))


@pytest.mark.skipif(not ruby_has_yjit(), reason="this ruby has no YJIT")
def test_lines_exact_under_yjit(tmp):
    script, sites = lines_of(tmp, ["--yjit", "--yjit-call-threshold=1"],
                             expect="done yjit\n")
    check_exact(script, sites)


# Code eval'd with a file name of its own inside a method: its
# allocations belong to that file and line, never the method's (Ruby
# 3.2+'s profiling API names the method's file beside the eval's line).
EVAL_SCRIPT = """\
def load_it(code, i) = eval(code, binding, "/virtual/evald.rb", 1)
CODE = "x = 1\\ny = 'e' * 150_000\\n[x, y]\\n"
500.times { |i| load_it(CODE, i) }
puts "done"
"""


def test_eval_with_a_file_name_inside_a_method(tmp):
    script = tmp / "evals.rb"
    script.write_text(EVAL_SCRIPT)
    p = run([MWRAP, "ruby", str(script)],
            env={"MWRAP": "dump_fd:2,dump_min:90000"}, timeout=120)
    assert p.returncode == 0 and p.stdout == "done\n", p.stderr
    sites = parse_dump(p.stderr[p.stderr.find("#"):])
    total, calls = sites.get("/virtual/evald.rb:2", (0, 0))
    assert 500 <= calls <= 510 and 500 * 150_001 <= total, sites
    # the method's line holds eval's compiling (~5 kB a call), no string
    total, _ = sites.get(f"{script}:1", (0, 0))
    assert total < 500 * 150_001 // 10, sites
