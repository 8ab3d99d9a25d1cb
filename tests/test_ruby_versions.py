# SPDX-License-Identifier: MIT
"""Ruby locations on every Ruby we run on (3.1's frame reads, 3.2+'s
profiling API) and under YJIT and ZJIT, which do not always keep a
frame's pc current: each big allocation must land on its own line,
exactly, and the JIT compiler's own memory (3.2+'s Rust JITs) is a site
of its own, never charged to the line that ran while it compiled.

The tests run on the `ruby` in PATH: make test-ruby-src runs them on
Rubies built from source with RUBYOPT=--yjit or --zjit, which the
interpreted case takes out."""
import os
import subprocess

import pytest

from conftest import (MWRAP, attach, gc_line_bytes, parse_dump,
                      parse_json_dump, ptrace_allowed, run, ruby_version,
                      scaled)

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
jit = %w[YJIT ZJIT].find {{ |j| RubyVM.const_defined?(j) && RubyVM.const_get(j).enabled? }}
puts(jit ? "done #{{jit.downcase}}" : "done")
"""


def ruby_jit():
    """(YJIT's or ZJIT's kind) -> whether the ruby in PATH has it: a
    ruby built without it accepts --yjit with a warning.  Its allocations
    are named by this site when libruby's Rust code is found (a source
    build keeps .symtab)."""
    found = {}
    for jit in ("yjit", "zjit"):
        code = (f"exit(RubyVM.const_defined?(:{jit.upper()}) && "
                f"RubyVM::{jit.upper()}.enabled? ? 0 : 1)")
        try:
            p = subprocess.run(["ruby", f"--{jit}", "-e", code],
                               timeout=scaled(30),
                               capture_output=True,
                               env=dict(os.environ, RUBYOPT=""))
            found[jit] = p.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            found[jit] = False
    return found


JITS = ruby_jit()


def ruby_has_rust_jit():
    # 3.1's YJIT is C (no compiler site); 3.2+'s is Rust
    return ruby_version() >= (3, 2)


def lines_of(tmp, ruby_args, expect="done\n", rubyopt="", text=SCRIPT):
    script = tmp / "lines.rb"
    script.write_text(text)
    p = run([MWRAP, "ruby"] + ruby_args + [str(script)],
            env={"MWRAP": "dump_fd:2,dump_min:90000", "RUBYOPT": rubyopt},
            timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expect
    dump = p.stderr[p.stderr.find("#"):] if "#" in p.stderr else p.stderr
    sites = parse_dump(dump)
    return script, sites


def check_exact(script, sites, want=None):
    want = want or {5: 100_001, 7: 200_001, 10: 300_001}
    for line, size in want.items():
        total, calls = sites.get(f"{script}:{line}", (0, 0))
        # plus a few small allocations of the line's own (method
        # caches, the block's array) and the GC's bookkeeping when GCs
        # run on the line (gc_line_bytes: Ruby 4.1, up to 52 blocks and
        # 129,800 B on line 10): far below one big string
        assert N <= calls <= N + 100, (line, sites)
        assert N * size <= total <= N * size + 65536 + gc_line_bytes(), (line, sites)
    # no other line of the script holds 90 kB (dump_min): a stale pc
    # would have moved big strings there (and short the lines above)
    for name in sites:
        if name.startswith(f"{script}:"):
            assert int(name.rsplit(":", 1)[1]) in want, (name, sites)


def test_lines_exact_interpreted(tmp):
    check_exact(*lines_of(tmp, []))


def test_frames_read_by_us(tmp):
    """We read the frames of every Ruby we run on (3.1 through its
    exported EC; 3.2+ through the EC's TLS index found in
    rb_profile_frames' code, which on aarch64 from 3.3 calls a getter),
    so that positions are cached by pc and stacks found by our walk;
    where not, each allocation asks Ruby for its line, several times the
    cost.  The dump's header says which."""
    script = tmp / "frames.rb"
    script.write_text('def work(i) = "x" * (1000 + i)\n'
                      "20_000.times { |i| work(i) }\n")
    p = run([MWRAP, "ruby", str(script)],
            env={"MWRAP": "dump_fd:2,dump_format:json,dump_min:100000"},
            timeout=120)
    assert p.returncode == 0, p.stderr
    header, _ = parse_json_dump(p.stderr[p.stderr.find("{"):])
    assert header["ruby"] is True, header
    assert header["ruby_frames"] == "read", header


def check_jit_site(name, sites):
    """The JIT compiler's own memory is its site, by name (what it holds
    varies with the compiler's work: only its presence is asserted)."""
    if not ruby_has_rust_jit():
        return
    total, calls = sites.get(name, (0, 0))
    assert total >= 90000 and calls > 0, (name, sites)


@pytest.mark.parametrize("jit", ["yjit", "zjit"])
def test_lines_exact_under_jit(tmp, jit):
    if not JITS[jit]:
        pytest.skip(f"this ruby has no {jit.upper()}" + (" (4.0+)" if jit == "zjit" else ""))
    script, sites = lines_of(tmp, [f"--{jit}", f"--{jit}-call-threshold=1"],
                             expect=f"done {jit}\n")
    check_exact(script, sites)
    check_jit_site(f"{jit.upper()} compiler", sites)


# Compiled methods called from compiled code, their allocations on
# lines 4, 9 and 13 (N each, of 100,001, 100,002 and 100,003 bytes):
# ZJIT (4.1) keeps such a frame's pc and iseq in its own record, and the
# cfp's, stale, named another method's line
CALLED = f"""\
STORE = []
def a(size, depth = 1)
  return a(size, depth - 1) if depth > 1
  STORE << ("g" * size)
end

def b(size, depth)
  return b(size, depth - 1) if depth > 1
  STORE << ("h" * size)
end

def c(size, depth = 1)
  STORE << ("i" * size)
end
{N}.times {{ a(100_000, 1); b(100_001, 1); c(100_002); STORE.clear }}
puts "done"
"""


@pytest.mark.parametrize("jit", ["yjit", "zjit"])
def test_lines_exact_in_methods_compiled_and_called_compiled(tmp, jit):
    if not JITS[jit]:
        pytest.skip(f"this ruby has no {jit.upper()}" + (" (4.0+)" if jit == "zjit" else ""))
    script, sites = lines_of(tmp, [f"--{jit}", f"--{jit}-call-threshold=1"], text=CALLED)
    check_exact(script, sites, {4: 100_001, 9: 100_002, 13: 100_003})


# Attached while the JIT compiles: the script of the lines above, run
# once "go" arrives, after the attach (the same line numbers: the loop on
# line 15 waits for it), then kept alive until stdin's end.
ATTACH_SCRIPT = SCRIPT.replace(
    f"{N}.times {{ |i| work(i) }}",
    f"$stdout.sync = true; puts 'ready'; $stdin.gets; {N}.times {{ |i| work(i) }}"
) + "$stdin.read\n"


def attached_lines(spawn, tmp, ruby_args, jit):
    script = tmp / "lines.rb"
    script.write_text(ATTACH_SCRIPT)
    t = spawn(["ruby"] + ruby_args + [str(script)],
              env={"RUBYOPT": ""})
    t.expect("ready")
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    t.send("go")
    t.expect(f"done {jit}", timeout=120)
    p = attach(["-p", str(t.pid), "--dump", "--format=json"])
    assert p.returncode == 0, p.stderr
    _, sites = parse_json_dump(p.stdout)
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    rc, _, _ = t.finish()
    assert rc == 0
    big = {k: (v["total_bytes"], v["allocations"]) for k, v in sites.items()
           if v["total_bytes"] >= 90000}
    return script, big


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
@pytest.mark.parametrize("jit", ["yjit", "zjit"])
def test_lines_exact_attached_under_jit(spawn, tmp, jit):
    if not JITS[jit]:
        pytest.skip(f"this ruby has no {jit.upper()}")
    script, sites = attached_lines(
        spawn, tmp, [f"--{jit}", f"--{jit}-call-threshold=1"], jit)
    check_exact(script, sites)
    check_jit_site(f"{jit.upper()} compiler", sites)


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
    # the GCs run on this line (its strings start them) add their own
    # blocks: on every Ruby the mark stack's chunks when it outgrows its
    # cache (gc_line_bytes; 3.4.3 with YJIT: 511 calls in one of two
    # runs); on Ruby 3.2 also the transient heap's evacuation (boot
    # objects' buffers moved into malloc'd blocks: 22 of them) and the
    # heap page list's growth, 525 calls in all (3.3 dropped the transient
    # heap); from 4.0 the weak-reference list's regrowth, 512
    extra = {(3, 2): 30}.get(ruby_version()[:2], 15 if ruby_version() >= (4,) else 5)
    assert 500 <= calls <= 510 + extra and 500 * 150_001 <= total, sites
    # the method's line holds eval's compiling (~5 kB a call), no string;
    # from Ruby 4.0 Prism also takes its nodes from arena blocks of 8,216 B,
    # two an eval here (pm_arena_block_new: 8,216,000 B of 4.1's 10,717,616)
    arena = 500 * 2 * 8216 if ruby_version() >= (4,) else 0
    total, _ = sites.get(f"{script}:1", (0, 0))
    assert total < 500 * 150_001 // 10 + arena, sites
