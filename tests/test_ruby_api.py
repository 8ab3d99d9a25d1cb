# SPDX-License-Identifier: MIT
"""The Mwrap Ruby API (ruby-ext/), with the mwrap gem's own test cases:
under scripts/mwrap (preload), in a process attached late, and without
libmwrap.so at all."""
import os

import pytest

from conftest import (MWRAP, ROOT, RUBY_API_I, RUBY_API_PATH, attach, fiddle_leak, parse_dump,
                      ptrace_allowed, ruby_lacks, ruby_version, run)

RUBY = ["ruby", "-w", "--disable=gems", *RUBY_API_I, "-rmwrap"]


def api(*lines, env=None):
    """Runs the -e lines (line N is -e:N) under the preload."""
    argv = [MWRAP] + RUBY
    for line in lines:
        argv += ["-e", line]
    return run(argv, env=env)


def test_dump_to_stderr_names_line_1():
    p = api('("helloworld"*1000).clear', "Mwrap.dump")
    assert p.returncode == 0, p.stderr
    total, calls = parse_dump(p.stderr)["-e:1"]
    assert 10001 <= total < 10001 + 1024 and 1 <= calls <= 10


def test_clear_drops_earlier_lines():
    p = api('("0"*10000).clear', "Mwrap.clear", '("0"*20000).clear',
            "Mwrap.dump($stdout, 9999)")
    assert p.returncode == 0, p.stderr
    sites = parse_dump(p.stdout)
    assert "-e:1" not in sites
    assert sites["-e:3"][0] >= 20001
    assert all(total > 9999 for total, _ in sites.values())


def test_each_yields_frozen_locations():
    p = api("n = 0",
            "Mwrap.each(1000) { |loc, total, calls, frees, age_total, max_life|",
            "  raise loc.inspect unless loc.frozen? && String === loc",
            "  raise 'total < calls' unless total >= calls && calls > 0",
            "  raise 'types' unless [frees, age_total, max_life].all?(Integer)",
            "  n += 1 }",
            "puts n")
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) > 0


def test_aref_each_sizes_and_generations():
    p = api("GC.disable; gen = GC.count",
            "Mwrap.reset",
            'keep = "0" * 10000',
            'rows = []; Mwrap["-e:3"].each { |size, g| rows << [size, g] }',
            "big = rows.select { |s, _| s >= 10000 }",
            "raise rows.inspect unless big.size == 1 && big[0][1] >= gen",
            "puts keep.size")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "10000\n"


def test_address_site_found_by_any_prefix():
    p = api("addr = nil",
            "Mwrap.each(1) { |loc, *| addr ||= loc if loc =~ /\\[0x\\h+\\]\\z/ }",
            "raise 'no address site' unless addr",
            "loc = Mwrap[\"bobloblaw\\t#{addr[/\\[0x\\h+\\]/]}\"]",
            "raise 'lookup failed' unless loc.is_a?(Mwrap::SourceLocation)",
            "raise 'name' unless loc.name == addr && loc.name.frozen?",
            "puts 'ok'")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok\n"


def test_dump_of_non_io_is_type_error():
    p = api("begin; Mwrap.dump(:bogus); rescue TypeError; puts 'TypeError'; end")
    assert p.stdout == "TypeError\n"


def test_source_location_counts_and_lifespans(tmp):
    script = tmp / "srcloc.rb"
    script.write_text("""\
GC.disable
s = "x" * 10000
loc = Mwrap["#{__FILE__}:2"]
raise "name" unless loc.name == "#{__FILE__}:2"
# the 10,001-byte buffer, plus Ruby 3.1's few small method-cache
# allocations the first time a line calls a method
raise "total #{loc.total}" unless loc.total >= 10001
raise "allocations #{loc.allocations}" unless (1..5).cover?(loc.allocations)
raise "frees #{loc.frees}" unless loc.frees == 0
raise "mean" unless loc.mean_lifespan == Float::INFINITY
raise "live" unless loc.each.map { |size, _| size }.max == 10001
s.clear
GC.enable
GC.start
raise "frees after clear #{loc.frees}" unless loc.frees == 1
raise "live after clear" if loc.each.any? { |size, _| size >= 10001 }
raise "types" unless loc.mean_lifespan.is_a?(Float) && loc.max_lifespan.is_a?(Integer)
puts "ok"
""")
    p = run([MWRAP] + RUBY + [str(script)])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok\n"


def test_quiet_depth_block_value_and_nothing_recorded():
    p = api("v = Mwrap.quiet { |d| a = Mwrap.quiet { |d2| [d, d2] }",
            '  "q" * 50_000; a }',
            "raise v.inspect unless v == [1, 2]",
            'raise "recorded" if Mwrap["-e:2"]',
            "puts :ok")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok\n"


def test_total_bytes():
    p = api('x = "a" * 100_000; x = nil; GC.start',
            "a, f = Mwrap.total_bytes_allocated, Mwrap.total_bytes_freed",
            "raise [a, f].inspect unless a > f && f > 0",
            "puts :ok")
    assert p.returncode == 0, p.stderr


# the mwrap article's script, after the Fiddle leak (line FIDDLE_LINE)
FIDDLE_LEAK, FIDDLE_LINE = fiddle_leak()
ARTICLE = FIDDLE_LEAK + """\
require 'mwrap'
results = []
Mwrap.each do |location, total, allocations, frees, age_total, max_lifespan|
  results << [location, ((total / allocations.to_f) * (allocations - frees)), allocations, frees]
end
results.sort! { |(_, growth_a), (_, growth_b)| growth_b <=> growth_a }
results[0, 3].each { |location, growth, allocations, frees|
  puts "#{location} #{growth.to_i} #{allocations} #{frees}"
}
"""


@pytest.mark.skipif(ruby_lacks("fiddle") is not None, reason=str(ruby_lacks("fiddle")))
def test_the_article_script_runs_unchanged(tmp):
    script = tmp / "leak.rb"
    script.write_text(ARTICLE)
    p = run([MWRAP, "ruby", *RUBY_API_I, str(script)])
    assert p.returncode == 0, p.stderr
    loc, growth, allocs, frees = p.stdout.splitlines()[0].split()
    assert loc == f"{script}:{FIDDLE_LINE}"
    assert abs(int(growth) - 51_200_000) < 51_200
    assert 100_000 <= int(allocs) <= 100_050 and 50_000 <= int(frees) <= 50_050


def test_without_libmwrap_require_works_and_calls_raise():
    p = run(RUBY + ["-e", "puts Mwrap::VERSION",
                    "-e", "begin; Mwrap.each {}; rescue Mwrap::NotLoaded => e; puts e.message; end"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "0.1"
    assert "libmwrap.so is not loaded" in lines[1] and "mwrap-attach" in lines[1]


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_api_in_a_process_attached_late(spawn):
    target = os.path.join(ROOT, "tests", "targets", "leak.rb")
    t = spawn(["ruby", target], env={"RUBYLIB": RUBY_API_PATH})
    ready = t.expect("ready")
    line = int(ready.split()[2].split("=")[1])
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    t.send("leak 200 5000")
    t.expect("leaked")
    t.send(f"api {target}:{line}")
    out = t.expect("api")
    _, total, allocations, live = out.split()
    assert int(total) >= 200 * 5000 and int(allocations) >= 200
    assert int(live) >= 200
    attach(["-p", str(t.pid), "--detach"])
    assert t.finish()[0] == 0


HEAP_CHECK = """\
a = []; 200_000.times { a << Object.new }; a = nil; GC.start
n = 0
Mwrap::HeapPageBody.each do |addr, gen|
  raise "unaligned #{addr}" unless addr % GC::INTERNAL_CONSTANTS[:HEAP_PAGE_SIZE] == 0
  raise "generation #{gen}" unless gen.between?(0, GC.count)
  n += 1
end
st = Mwrap::HeapPageBody.stat
raise st.inspect unless st[:lifespan_mean].is_a?(Float) && st[:lifespan_max].is_a?(Integer)
raise st.inspect unless st[:deathspan_min] <= st[:deathspan_max]
raise st.inspect unless st[:bytes] == n * st[:page_size]
raise st.inspect unless st[:freed_pages] > 0 || st[:deathspan_max] == -1
puts "#{n} #{GC.stat(:heap_allocated_pages)} #{st[:freed_pages]}"
"""


def test_heap_page_body_counts_every_page(tmp):
    """Ruby mmaps its heap pages: we count exactly Ruby's own
    heap_allocated_pages in preload mode.  Ruby 3 unmaps the pages a
    full GC emptied at once; 4.x (4.1.0-dev) keeps them for later
    (freed_pages 0 here, then no page's death is timed)."""
    script = tmp / "heap.rb"
    script.write_text(HEAP_CHECK)
    p = run([MWRAP] + RUBY + [str(script)])
    assert p.returncode == 0, p.stderr
    ours, rubys, freed = p.stdout.split()
    assert int(ours) == int(rubys) > 0
    assert int(freed) > 0 or ruby_version() >= (4,), p.stdout


def ruby_heap_page_size():
    """HEAP_PAGE_SIZE: 16 KiB up to Ruby 3.1, 64 KiB from 3.2."""
    v = run(["ruby", "-e", "print RUBY_VERSION"]).stdout.split(".")
    return 65536 if (int(v[0]), int(v[1])) >= (3, 2) else 16384


def test_dump_heap_pages_lines(tmp):
    path = tmp / "heap.dump"
    p = api("a = []; 50_000.times { a << Object.new }",
            env={"MWRAP": f"dump_path:{path},dump_heap:7"})
    assert p.returncode == 0, p.stderr
    text = path.read_text()
    size = ruby_heap_page_size()
    assert f"heap_page_size: {size}" in text and "lifespan_stddev: " in text
    pages = [l for l in text.splitlines() if l.startswith("0x")]
    if size == 65536 and not pages:
        # from 3.2 (ruby_vm_destruct) Ruby frees every page before exit
        assert "heap_pages: 0\n" in text, text
        assert "heap_pages_allocated: 0\n" not in text, text
    else:
        assert pages and all(int(l.split("\t")[0], 16) % size == 0
                             for l in pages)
    assert parse_dump(text) == {}


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_heap_pages_after_attach(spawn):
    target = os.path.join(ROOT, "tests", "targets", "leak.rb")
    t = spawn(["ruby", target], env={"RUBYLIB": RUBY_API_PATH})
    t.expect("ready")
    p = attach(["-p", str(t.pid), "--keep"])
    assert p.returncode == 0, p.stderr
    t.send("objects 300000")
    t.expect("objects")
    t.send("pages")
    _, pages, page_size = t.expect("pages").split()
    assert int(pages) > 10 and int(page_size) == ruby_heap_page_size()
    attach(["-p", str(t.pid), "--detach"])
    assert t.finish()[0] == 0
