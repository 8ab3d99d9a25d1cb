# SPDX-License-Identifier: MIT
"""Preload mode: libmwrap.so via LD_PRELOAD (scripts/mwrap), mwrap's own
acceptance cases plus ours.  Every process is real and bounded in time."""
import json
import os
import pytest

from conftest import (LIB, MWRAP, TARGETS, fiddle_leak, parse_dump, ruby_lacks,
                      parse_json_dump, run)

HELLO = '("helloworld"*1000).clear'


def ruby_preloaded(args, mwrap_opts, **kw):
    return run([MWRAP, "ruby"] + args, env={"MWRAP": mwrap_opts}, **kw)


def test_dump_fd_5_names_the_line(tmp):
    out = tmp / "fd5"
    # the shell opens fd 5 for the child, as a user would
    p = run(["sh", "-c", 'exec "$0" ruby -e "$1" 5>"$2"', MWRAP, HELLO,
             str(out)], env={"MWRAP": "dump_fd:5"})
    assert p.returncode == 0, p.stderr
    sites = parse_dump(out.read_text())
    total, calls = sites["-e:1"]
    # the 10,000-byte string plus its NUL in one malloc, and a few small
    # method-cache allocations on the same line (3.1: under 1 KiB, 3.4:
    # 2,128 bytes)
    assert total >= 10001 and total < 10001 + 4096
    assert 1 <= calls <= 10


def test_dump_fd_1_with_dump_min(tmp):
    p = ruby_preloaded(["-e", HELLO], "dump_fd:1,dump_min:10000")
    assert p.returncode == 0, p.stderr
    sites = parse_dump(p.stdout)
    assert sites["-e:1"][0] >= 10001
    assert all(total > 10000 for total, _ in sites.values())


def test_dump_path_with_dump_min(tmp):
    path = tmp / "out.dump"
    p = ruby_preloaded(["-e", HELLO], f"dump_path:{path},dump_min:10000")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    sites = parse_dump(path.read_text())
    assert sites["-e:1"][0] >= 10001
    assert all(total > 10000 for total, _ in sites.values())
    first = path.read_text().splitlines()[0]
    assert first.startswith("# mwrap-attach") and "age_unit=gc_generations" in first


def test_dump_path_appends(tmp):
    path = tmp / "out.dump"
    for _ in range(2):
        assert ruby_preloaded(["-e", HELLO],
                              f"dump_path:{path}").returncode == 0
    assert path.read_text().count("# mwrap-attach") == 2


# 100,000 x Fiddle.malloc(1024) on line FIDDLE_LINE, half of them freed
FIDDLE_LEAK, FIDDLE_LINE = fiddle_leak()
FIDDLE_LEAK += 'puts "leaked"\n'
needs_fiddle = pytest.mark.skipif(ruby_lacks("fiddle") is not None,
                                  reason=str(ruby_lacks("fiddle")))


@needs_fiddle
def test_fiddle_leak_attributed_to_its_line(tmp):
    script = tmp / "leak.rb"
    script.write_text(FIDDLE_LEAK)
    path = tmp / "leak.json"
    p = ruby_preloaded([str(script)],
                       f"dump_path:{path},dump_format:json")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "leaked\n"
    header, sites = parse_json_dump(path.read_text())
    assert header["pid"] > 0 and header["age_unit"] == "gc_generations"
    site = sites[f"{script}:{FIDDLE_LINE}"]
    # 100,000 x 1024 bytes, plus at most 50 small ones Ruby makes there:
    # method-cache entries the first time the line calls a method, and the
    # GC's mark-stack chunks (4008 B each) when a GC starts on the line,
    # as it may several times (3.4 with YJIT: 24,152 B of them)
    extra = 50 * 4096
    assert 100_000 <= site["allocations"] <= 100_050
    assert 102_400_000 <= site["total_bytes"] <= 102_400_000 + extra
    assert 50_000 <= site["frees"] <= 50_050
    assert 51_200_000 <= site["live_bytes"] <= 51_200_000 + extra
    assert 50_000 <= site["live_count"] <= 50_050


def test_non_ruby_perl_output_intact(tmp):
    path = tmp / "perl.dump"
    p = run([MWRAP, "perl", "-e", 'print("HELLO_WORLD")'],
            env={"MWRAP": f"dump_path:{path}"})
    assert p.returncode == 0
    assert p.stdout == "HELLO_WORLD"
    text = path.read_text()
    assert "age_unit=ns" in text
    assert "[0x" in text
    assert len(parse_dump(text)) > 3


def test_c_program_sites_are_symbolised(tmp):
    path = tmp / "c.json"
    p = run([MWRAP, os.path.join(TARGETS, "hello")],
            env={"MWRAP": f"dump_path:{path},dump_format:json"})
    assert p.returncode == 0
    assert p.stdout == "HELLO_FROM_C 1 enomem=1\n"
    _, sites = parse_json_dump(path.read_text())
    mine = [s for loc, s in sites.items() if "(leak_here+0x" in loc]
    assert len(mine) == 1, list(sites)
    site = mine[0]
    assert site["location"].startswith(os.path.join(TARGETS, "hello"))
    assert site["allocations"] == 1000
    assert site["total_bytes"] == 4096 * 1000
    # the block whose realloc failed was put back, and its free counted
    assert site["frees"] == 501 and site["live_bytes"] == 4096 * 499


@pytest.mark.parametrize("threads", [1, 4, 12])
def test_one_hot_site_in_many_threads_counts_exactly(tmp, threads):
    """Past 4096 allocations a site's counters are split into stripes,
    one per thread (threads beyond 8 share): the dump sums them."""
    path = tmp / "hot.json"
    count = 60_000
    p = run([MWRAP, os.path.join(TARGETS, "hotsite"), str(threads), str(count)],
            env={"MWRAP": f"dump_path:{path},dump_format:json"}, timeout=60)
    assert p.returncode == 0 and p.stdout == f"hotsite {threads} x {count}\n"
    _, sites = parse_json_dump(path.read_text())
    mine = [s for loc, s in sites.items() if "(hot_alloc+0x" in loc]
    assert len(mine) == 1, list(sites)
    site, n = mine[0], threads * count
    assert site["allocations"] == n and site["total_bytes"] == n * 100
    assert site["frees"] == n - n // 10
    assert site["live_count"] == n // 10 and site["live_bytes"] == n // 10 * 100
    # ages are in ~1 ms units here: most are 0; the largest bounds the mean
    assert site["max_lifespan"] * site["frees"] >= site["age_total"]


def test_children_forked_while_threads_allocate_do_not_hang():
    """fork() copies only the calling thread: a lock of ours another thread
    held at that instant would stay held in the child for ever (84 of 200
    children hung before the fork handlers took them all)."""
    p = run([MWRAP, os.path.join(TARGETS, "forker"), "100"], timeout=120)
    assert p.returncode == 0 and p.stdout == "forked 100\n", p.stdout + p.stderr


def test_application_sigusr1_handler_still_fires(tmp):
    script = tmp / "usr1.rb"
    script.write_text("""\
n = 0
trap(:USR1) { n += 1 }
10.times { Process.kill(:USR1, Process.pid); sleep 0.01 }
sleep 0.1 while n < 10
puts "usr1=#{n}"
""")
    p = ruby_preloaded([str(script)], "dump_fd:2", timeout=30)
    assert p.returncode == 0
    assert p.stdout == "usr1=10\n"


def test_ruby_threads_attributed_to_their_lines(tmp):
    script = tmp / "threads.rb"
    script.write_text("""\
keep = []
m = Mutex.new
ts = 4.times.map do
  Thread.new do
    200.times { s = "t" * 50_000; m.synchronize { keep << s } }
  end
end
ts.each(&:join)
puts keep.size
""")
    path = tmp / "t.json"
    p = ruby_preloaded([str(script)], f"dump_path:{path},dump_format:json")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "800\n"
    _, sites = parse_json_dump(path.read_text())
    site = sites[f"{script}:5"]
    assert site["allocations"] >= 800
    assert site["total_bytes"] >= 800 * 50_001


@pytest.mark.parametrize("extra", ["", ",sample:64"])
def test_lines_stay_exact_as_code_is_compiled_and_collected(tmp, extra):
    """Sites are cached by (pc, iseq) while the code buffer the pc lies in
    lives: the same code compiled again and again at other lines (each
    iseq freed by the next GC, its memory reused by the next one) lands
    on its own lines.  Sampled (every 6,001-byte block is taken, with
    weight 1), the code buffers' frees must still be looked up."""
    script = tmp / "evals.rb"
    script.write_text("""\
300.times do |i|
  eval("'a' * 6000", nil, "gen.rb", 1 + i % 5)
  GC.start
end
""")
    path = tmp / "e.json"
    p = ruby_preloaded([str(script)], f"dump_path:{path},dump_format:json{extra}")
    assert p.returncode == 0, p.stderr
    _, sites = parse_json_dump(path.read_text())
    lines = [f"gen.rb:{n}" for n in range(1, 6)]
    assert sorted(k for k in sites if k.startswith("gen.rb:")) == lines
    for loc in lines:
        # 60 strings of 6,001 bytes each (and a few small allocations)
        assert sites[loc]["total_bytes"] // 6001 == 60, (loc, sites[loc])


def test_stacks_stay_exact_as_code_is_compiled_and_collected(tmp):
    """--stacks: a stack's site is cached by its frames' positions while
    the code they lie in lives (walkcache.h): the same code compiled again
    and again at other lines, called from two lines, each iseq freed by
    the next GC and its memory reused by the next one, lands on its own
    stacks."""
    script = tmp / "evals.rb"
    script.write_text("""\
def gen(i) = eval("'a' * 6000", nil, "gen.rb", 1 + i % 5)
300.times do |i|
  gen(i) if i.even?
  gen(i) if i.odd?
  GC.start
end
""")
    path = tmp / "s.json"
    p = ruby_preloaded([str(script)], f"dump_path:{path},dump_format:json,stacks:4")
    assert p.returncode == 0, p.stderr
    strings = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        stack = r.get("stack", [])
        # the eval'd line (named by gen.rb or, as Ruby names code eval'd
        # in a method, by the method's file), under gen's own line
        if r["type"] != "site" or len(stack) < 3 or \
                not stack[1].startswith(f"{script}:1 in "):
            continue
        callers = {f.split(" in ")[0] for f in stack[2:]} & \
            {f"{script}:3", f"{script}:4"}
        assert len(callers) == 1, r
        # 30 strings of 6,001 bytes each (and a few small allocations)
        key = (int(r["location"].rsplit(":", 1)[1]), callers.pop())
        strings[key] = strings.get(key, 0) + r["total_bytes"] // 6001
    assert strings == {(1 + i % 5, f"{script}:{3 + i % 2}"): 30
                       for i in range(10)}


@pytest.mark.parametrize("bad", [
    "dump_fd:x", "dump_min:-1", "bogus:1", "dump_path", "dump_heap:99",
    "dump_format:xml", "dump_fd:1,zz:2",
])
def test_malformed_option_runs_untraced(tmp, bad):
    p = ruby_preloaded(["-e", HELLO + '; puts "alive"'], bad)
    assert p.returncode == 0
    assert p.stdout == "alive\n"
    lines = [l for l in p.stderr.splitlines() if l.startswith("mwrap: ")]
    assert lines and "MWRAP: " in lines[0]
    item = bad.split(",")[-1].split(":")[0]
    assert item in lines[0]


def test_no_mwrap_variable_means_no_dump():
    p = run([MWRAP, "ruby", "-e", HELLO + '; puts "ok"'])
    assert p.returncode == 0
    assert p.stdout == "ok\n" and p.stderr == ""


def test_dump_heap_5_prints_stats_only(tmp):
    path = tmp / "heap.dump"
    p = ruby_preloaded(["-e", HELLO], f"dump_path:{path},dump_heap:5")
    assert p.returncode == 0
    text = path.read_text()
    assert "lifespan_stddev" in text
    assert parse_dump(text) == {}


def test_launcher_help_and_usage():
    p = run([MWRAP, "--help"])
    assert p.returncode == 0 and "dump_path:FILE" in p.stdout
    p = run([MWRAP])
    assert p.returncode == 2 and "usage:" in p.stderr


def test_launcher_keeps_existing_ld_preload():
    p = run([MWRAP, "ruby", "-e", 'puts ENV["LD_PRELOAD"]'],
            env={"LD_PRELOAD": "libpthread.so.0"})
    assert p.returncode == 0
    assert p.stdout.strip() == f"{os.path.realpath(LIB)}:libpthread.so.0"


@needs_fiddle
def test_sampled_mode_estimates_the_leak(tmp):
    """sample:BYTES records ~one allocation per BYTES bytes and scales:
    the leaking line's estimates land near the exact figures and the
    header says the figures are sampled."""
    script = tmp / "leak.rb"
    script.write_text(FIDDLE_LEAK)
    path = tmp / "leak.json"
    p = ruby_preloaded([str(script)],
                       f"dump_path:{path},dump_format:json,sample:16384")
    assert p.returncode == 0, p.stderr
    header, sites = parse_json_dump(path.read_text())
    assert header["sample_bytes"] == 16384
    site = sites[f"{script}:{FIDDLE_LINE}"]
    # ~6,250 samples for 102.4 MB: the estimate's relative error is ~1.3%
    # (1/sqrt(6250)); allow 10%
    assert abs(site["total_bytes"] - 102_400_000) < 10_240_000
    assert abs(site["allocations"] - 100_000) < 10_000
    assert abs(site["live_bytes"] - 51_200_000) < 5_120_000
    top = max(sites.values(), key=lambda s: s["live_bytes"])
    assert top["location"] == f"{script}:{FIDDLE_LINE}"


def test_sampled_text_header(tmp):
    p = ruby_preloaded(["-e", HELLO], "dump_fd:1,sample:4096")
    assert p.returncode == 0
    assert "sample_bytes=4096" in p.stdout.splitlines()[0]
