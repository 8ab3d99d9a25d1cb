# SPDX-License-Identifier: MIT
"""mwrap-report --merge: the dumps of several pods as one report, each
row saying how its bytes split among the sources, in text, JSON, pprof,
HTML and speedscope; and what it refuses.

Real processes: tests/targets/leak.rb, one process a pod, each sent its
own load (N requests: N strings of SIZE bytes kept on its leak line, 10
times as many dropped at once on its garbage line), its dump taken by
mwrap-attach as an operator would (a window with --format=json -o, or
--keep then --dump, or mwrap's preload at exit).  The fast tests read
hand-written dumps (tests/data/merge_*.json)."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (ATTACH, LEAK_RB, MWRAP, ROOT, Proc, attach,
                      first_source_line, helper_answered, needs_ptrace,
                      parse_json_dump, ptrace_allowed, run, scaled, sections,
                      site_value, stop_all)
from test_pprof import PROTOC, decode

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
DATA = os.path.join(ROOT, "tests", "data")
A, B, EXIT = (os.path.join(DATA, f"merge_{n}.json") for n in ("a", "b", "exit"))
SIZE = 10_000
# What a pod's leak line holds beside its N strings: the KEEP array's
# buffer (8 bytes a pointer), small allocations Ruby makes there
# (LINE_SLACK) and, when a GC starts on the line, the GC's mark-stack
# chunks (4008 B each; test_preload.py): at most 64 KiB.
SLACK = 64 * 1024
# A rounding of each source's stack records when they are scaled to its
# line's exact bytes: a byte or so a record.
ROUNDING = 16
GO = shutil.which("go")


def report(*args):
    return run([REPORT, *args])


def human(n):
    """mwrap-report's human size (MwrapReport.human)."""
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(x) < 1024:
            return f"{int(x)} B" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{x:.1f} TiB"


def split_words(noun, total, parts):
    """The line under a merged row: "in 2 of 3 sources: a 1.0 MiB (75%),
    ..." for PARTS [(name, bytes)], the heaviest first."""
    whole = sum(b for _, b in parts)
    words = ", ".join(f"{n} {human(b)} ({100 * b / whole:.0f}%)" for n, b in parts)
    return f"in {len(parts)} of {total} {noun}: {words}"


def apps_rows(text):
    """The application table of a text report: [(figure, location, [lines
    under it])], in its order."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("the application's lines"))
    rows = []
    for line in lines[start + 2:]:
        if line.startswith("("):
            break
        if line.startswith(" " * 20):
            rows[-1][2].append(line.strip())
        else:
            parts = line.split()
            rows.append((" ".join(parts[:2]), parts[-1], []))
    return rows


def under_site(text, location):
    """The lines under LOCATION's row in the site table."""
    lines = text.splitlines()
    i = next(i for i, l in enumerate(lines) if "total_bytes" in l and l.rstrip().endswith("location"))
    j = next(j for j in range(i + 1, len(lines)) if lines[j].endswith("  " + location))
    out = []
    for line in lines[j + 1:]:
        if not line.startswith(" " * 20) or line.strip()[0].isdigit():
            break
        out.append(line.strip())
    return out


def records(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def decode_samples(path):
    """A pprof profile's samples as [(leaf frame's function name,
    {sample type: value}, {label: value})] (test_pprof's protoc decode)."""
    prof, strings = decode(path)
    types = [strings[t["type"][0]] for t in prof["sample_type"]]
    funcs = {f["id"][0]: strings[f["name"][0]] for f in prof["function"]}
    locs = {l["id"][0]: funcs[l["line"][0]["function_id"][0]] for l in prof["location"]}
    return [(locs[s["location_id"][0]], dict(zip(types, s["value"])),
             {strings[l["key"][0]]: strings[l["str"][0]] for l in s.get("label", [])})
            for s in prof["sample"]]


# --- hand-written dumps: merge_a.json (web-1), merge_b.json (web-2) -----
# app/cache.rb:20 holds 3,000,000 bytes in a and 1,000,000 in b; the JSON
# line (called from app/orders.rb:10) 900,000 and 500,000, b with no
# stack of it; app/render.rb:15 holds nothing (garbage in flight).

@pytest.mark.fast
def test_the_leak_line_first_with_the_sum_and_each_sources_share():
    p = report("--merge", A, B)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "=== merged view of 2 sources: merge_a.json, merge_b.json ==="
    assert lines[1] == "mwrap report: pid 101,102, window 10.0 s, ages in gc_generations"
    apps = apps_rows(p.stdout)
    assert [(fig, loc) for fig, loc, _ in apps] == [("3.8 MiB", "app/cache.rb:20"), ("1.3 MiB", "app/orders.rb:10")]
    assert apps[0][2] == [split_words("sources", 2, [("merge_a.json", 3_000_000), ("merge_b.json", 1_000_000)])]
    assert site_value(lines, "app/cache.rb:20", "held_bytes") == 4_000_000
    assert site_value(lines, "app/cache.rb:20", "live_bytes") == 4_000_000
    assert under_site(p.stdout, "app/cache.rb:20") == [
        "in 2 of 2 sources: merge_a.json 2.9 MiB (75%), merge_b.json 976.6 KiB (25%)"]
    # a row that holds nothing says where its bytes in flight are
    assert under_site(p.stdout, "app/render.rb:15") == [
        "in flight in 2 of 2 sources: merge_b.json 2.9 MiB (60%), merge_a.json 1.9 MiB (40%)"]
    parts = {t: [l for l in ls if l] for t, ls in sections(p.stdout).items()}
    assert parts["source merge_a.json (pid 101, host web-1)"][-1] == "holds most: 2.9 MiB app/cache.rb:20"
    assert parts["source merge_b.json (pid 102, host web-2)"][-1] == "holds most: 976.6 KiB app/cache.rb:20"


@pytest.mark.fast
def test_a_line_a_source_has_no_stack_of_takes_the_others_callers():
    """b sampled no stack of the JSON line: its 500,000 held bytes there
    go to the caller a's stacks name, and stay b's."""
    p = report("--merge", A, B)
    assert p.returncode == 0, p.stderr
    orders = next(r for r in apps_rows(p.stdout) if r[1] == "app/orders.rb:10")
    assert orders[2] == [split_words("sources", 2, [("merge_a.json", 900_000), ("merge_b.json", 500_000)]),
                         "allocating in /usr/lib/ruby/3.1.0/json/common.rb:312 (100%)"]
    json_line = "/usr/lib/ruby/3.1.0/json/common.rb:312"
    assert under_site(p.stdout, json_line) == [
        split_words("sources", 2, [("merge_a.json", 900_000), ("merge_b.json", 500_000)]),
        "called from app/orders.rb:10 (100%)"]


@pytest.mark.fast
def test_a_source_without_held_bytes_ranks_all_by_live_and_says_which():
    p = report("--merge", A, B, EXIT)
    assert p.returncode == 0, p.stderr
    assert ("rows rank by live bytes: not every source splits held from in flight "
            "(merge_exit.json: taken as the process exited)") in p.stdout.splitlines()
    assert "held_bytes" not in p.stdout
    apps = apps_rows(p.stdout)
    assert apps[0][:2] == ("5.7 MiB", "app/cache.rb:20")
    assert apps[0][2] == [split_words("sources", 3, [("merge_a.json", 3_000_000), ("merge_exit.json", 2_000_000),
                                                     ("merge_b.json", 1_000_000)])]
    assert site_value(p.stdout.splitlines(), "app/cache.rb:20", "live_bytes") == 6_000_000


@pytest.mark.fast
def test_dumps_all_taken_at_exit_rank_by_live_and_say_so(tmp):
    other = tmp / "web-4.json"
    shutil.copy(EXIT, other)
    p = report("--merge", EXIT, str(other))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[3] == (
        "rows rank by live bytes: no source splits held from in flight "
        "(merge_exit.json: taken as the process exited; web-4.json: taken as the process exited)")


@pytest.mark.fast
def test_json_carries_each_sites_sources_and_each_sources_table():
    p = report("--merge", "--format", "json", A, B)
    assert p.returncode == 0, p.stderr
    recs = records(p.stdout)
    head = recs[0]
    assert head["type"] == "header" and head["sources_noun"] == "sources"
    assert head["sources"] == [{"name": "merge_a.json", "file": A, "pid": 101, "host": "web-1"},
                               {"name": "merge_b.json", "file": B, "pid": 102, "host": "web-2"}]
    sites = [r for r in recs if r["type"] == "site"]
    assert sites[0]["location"] == "app/cache.rb:20" and sites[0]["held_bytes"] == 4_000_000
    assert [(s["source"], s["held_bytes"], s["live_bytes"], s["share"]) for s in sites[0]["sources"]] == [
        ("merge_a.json", 3_000_000, 3_000_000, 0.75), ("merge_b.json", 1_000_000, 1_000_000, 0.25)]
    procs = [r for r in recs if r["type"] == "process"]
    assert [(r["source"], r["pid"], r["sites"][0]["location"]) for r in procs] == [
        ("merge_a.json", 101, "app/cache.rb:20"), ("merge_b.json", 102, "app/cache.rb:20")]


@pytest.mark.fast
@pytest.mark.skipif(PROTOC is None, reason="protoc not installed")
def test_pprof_labels_each_sample_with_its_source(tmp):
    out = tmp / "m.pb.gz"
    p = report("--merge", "--format", "pprof", "-o", str(out), A, B)
    assert p.returncode == 0, p.stderr
    held = {}
    for leaf, values, labels in decode_samples(out):
        key = (leaf.split(" in ")[0], labels["source"])
        held[key] = held.get(key, 0) + values["held_space"]
    assert held[("app/cache.rb:20", "merge_a.json")] == 3_000_000
    assert held[("app/cache.rb:20", "merge_b.json")] == 1_000_000
    assert held[("/usr/lib/ruby/3.1.0/json/common.rb:312", "merge_b.json")] == 500_000


@pytest.mark.fast
def test_html_lists_the_sources_and_each_rows_split(tmp):
    out = tmp / "m.html"
    p = report("--merge", "--format", "html", "-o", str(out), A, B)
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    assert "<title>mwrap report: merged view of 2 sources: merge_a.json, merge_b.json</title>" in page
    table = re.search(r'<table id="sources">.*?</table>', page).group(0)
    assert re.findall(r'<tr><td class="loc">([^<]+)</td><td>(\d+)</td><td>([^<]+)</td>', table) == [
        ("merge_a.json", "101", "web-1"), ("merge_b.json", "102", "web-2")]
    assert ('<div class="sources" title="merge_a.json: 3,000,000 bytes\nmerge_b.json: 1,000,000 bytes">'
            "in 2 of 2 sources: merge_a.json 2.9 MiB (75%), merge_b.json 976.6 KiB (25%)</div>") in page


@pytest.mark.fast
def test_speedscope_has_a_profile_per_source():
    p = report("--merge", "--format", "speedscope", A, B)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [(pr["name"], pr["endValue"]) for pr in doc["profiles"]] == [
        ("held bytes, rooted at the allocation", 5_400_000),
        ("held bytes by stack, outermost frame first", 5_400_000),
        ("held bytes in merge_a.json, rooted at the allocation", 3_900_000),
        ("held bytes in merge_b.json, rooted at the allocation", 1_500_000)]


@pytest.mark.fast
@pytest.mark.parametrize("files, code, message", [
    (["merge_a.json"], 2, "--merge wants two dumps or more (1 given)"),
    (["merge_a.json", "merge_a.json"], 2, "merge_a.json given twice"),
    (["merge_a.json", "missing.json"], 3, "cannot read {d}/missing.json: No such file or directory"),
    (["merge_a.json", "garbage.txt"], 3, '{d}/garbage.txt:1: not a dump line: "this is not a dump"'),
    (["merge_a.json", "mwrap3.txt"], 3, "{d}/mwrap3.txt: an mwrap text dump (three columns: no frees, "
                                        "held bytes or stacks); --merge reads JSON dumps"),
    (["merge_a.json", "headless"], 3, "headless.json: not a dump: it has no header record"),
    (["merge_a.json", "merged"], 3, "merged.json: a merged report, not a dump: merge the dumps it was made from"),
])
def test_what_merge_refuses(tmp, files, code, message):
    """A distinct exit code a class: 2 for the command line, 3 for a file
    that cannot be read as a dump; one line naming the file."""
    (tmp / "headless.json").write_text('{"type":"site","location":"a.rb:1","total_bytes":1,"allocations":1}\n')
    (tmp / "merged.json").write_text(report("--merge", "--format", "json", A, B).stdout)
    paths = [str(tmp / f"{f}.json") if f in ("headless", "merged") else os.path.join(DATA, f) for f in files]
    p = report("--merge", *paths)
    assert p.returncode == code, (p.returncode, p.stderr)
    assert p.stdout == ""
    assert p.stderr.startswith("mwrap-report: ") and message.format(d=DATA) in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 1


@pytest.mark.fast
def test_merge_and_diff_do_not_mix():
    p = report("--merge", "--diff", A, B)
    assert p.returncode == 2 and "--diff or --merge, not both" in p.stderr


@pytest.mark.fast
def test_sources_of_one_name_are_named_by_their_paths(tmp):
    for pod, src in (("web-1", A), ("web-2", B)):
        (tmp / pod).mkdir()
        shutil.copy(src, tmp / pod / "dump.json")
    p = run([REPORT, "--merge", "web-1/dump.json", "web-2/dump.json"], cwd=tmp)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "=== merged view of 2 sources: web-1/dump.json, web-2/dump.json ==="
    assert "=== source web-2/dump.json (pid 102, host web-2) ===" in p.stdout


@pytest.mark.fast
def test_a_file_of_appended_dumps_is_read_as_its_last(tmp):
    """MWRAP=dump_path: appends a dump each run, kill -URG one each
    signal: the last is the process's table now."""
    older = tmp / "older.json"
    with open(A) as a, open(B) as b:
        older.write_text(b.read() + a.read())
    p = report("--merge", "--format", "json", str(older), B)
    assert p.returncode == 0, p.stderr
    head = records(p.stdout)[0]
    assert [s["pid"] for s in head["sources"]] == [101, 102]
    cache = next(r for r in records(p.stdout) if r.get("location") == "app/cache.rb:20")
    assert cache["held_bytes"] == 4_000_000


# --- real pods -----------------------------------------------------------

def start_pod(procs, env=None, argv=("ruby",)):
    """A pod (tests/targets/leak.rb) run by ARGV: (its Proc, leak line,
    garbage line)."""
    pod = Proc([*argv, LEAK_RB], env=env)
    procs.append(pod)
    fields = dict(w.split("=", 1) for w in pod.expect("ready").split() if "=" in w)
    return pod, f"{LEAK_RB}:{fields['leak_line']}", f"{LEAK_RB}:{fields['garbage_line']}"


def serve(pod, n, garbage=10):
    """N requests: N strings kept, GARBAGE times as many dropped."""
    pod.send(f"leak {n} {SIZE}")
    pod.expect(f"leaked {n}", timeout=60)
    pod.send(f"garbage {garbage * n} {SIZE}")
    pod.expect(f"garbage {garbage * n}", timeout=60)


def windows(loads, tmp):
    """One mwrap-attach window a pod, side by side (-d 3 --gc
    --format=json -o POD.json), each pod served its load once every
    window is open: {name: its dump's path}.  LOADS: {name: (pod, n)}."""
    runs = {}
    try:
        for name, (pod, _) in loads.items():
            out = tmp / f"{name}.json"
            runs[name] = (out, subprocess.Popen(
                [ATTACH, "-p", str(pod.pid), "-d", "3", "--gc",
                 "--format=json", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + scaled(30)
        while not all(helper_answered(pod.pid) for pod, _ in loads.values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pod, n in loads.values():
            serve(pod, n)
        for name, (out, p) in runs.items():
            _, err = p.communicate(timeout=scaled(90))
            assert p.returncode == 0, (name, err)
    finally:
        for _, p in runs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    return {name: str(out) for name, (out, _) in runs.items()}


@pytest.fixture(scope="module")
def pods_in_windows(tmp_path_factory):
    """Two pods, 300 and 100 requests, each in its own window: (dumps
    {name: path}, leak line, garbage line, {name: its own dump's leak
    site})."""
    if ptrace_allowed() is not None:
        pytest.skip(f"ptrace not permitted: {ptrace_allowed()}")
    tmp = tmp_path_factory.mktemp("merge")
    procs = []
    try:
        (a, leak, garbage), (b, _, _) = start_pod(procs), start_pod(procs)
        dumps = windows({"pod-a": (a, 300), "pod-b": (b, 100)}, tmp)
        for pod in (a, b):
            assert pod.finish()[0] == 0
    finally:
        stop_all(procs)
    own = {name: parse_json_dump(open(path).read())[1][leak] for name, path in dumps.items()}
    return dumps, leak, garbage, own


def test_pods_each_own_leak_line_exact(pods_in_windows):
    """Each window's own dump: the strings its pod kept, all held after
    --gc's GC."""
    _, _, _, own = pods_in_windows
    for name, n in (("pod-a", 300), ("pod-b", 100)):
        assert n * SIZE <= own[name]["held_bytes"] <= own[name]["live_bytes"] <= n * SIZE + SLACK, name
        assert own[name]["held_bytes"] == own[name]["live_bytes"], name


def test_merged_text_puts_the_leak_line_first_with_both_pods_bytes(pods_in_windows):
    dumps, leak, garbage, own = pods_in_windows
    p = report("--merge", "--top", "0", dumps["pod-a"], dumps["pod-b"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "=== merged view of 2 sources: pod-a.json, pod-b.json ==="
    # the first line of Ruby a reader meets, first among the application's
    assert first_source_line(p.stdout) == leak
    apps = apps_rows(p.stdout)
    held = own["pod-a"]["held_bytes"] + own["pod-b"]["held_bytes"]
    assert apps[0][:2] == (human(held), leak)
    split = split_words("sources", 2, [("pod-a.json", own["pod-a"]["held_bytes"]),
                                       ("pod-b.json", own["pod-b"]["held_bytes"])])
    assert apps[0][2][0] == split and "(75%)" in split and "(25%)" in split
    assert 400 * SIZE <= site_value(lines, leak, "held_bytes") == held <= 400 * SIZE + 2 * SLACK
    assert site_value(lines, leak, "live_bytes") == own["pod-a"]["live_bytes"] + own["pod-b"]["live_bytes"]
    assert under_site(p.stdout, leak)[0] == split
    # 4,000 garbage strings a pod, none left after the GC
    assert site_value(lines, garbage, "live_bytes") < SIZE
    # both windows' growth series, summed sample by sample
    assert re.search(r"  growth +location$", next(l for l in lines if "total_bytes" in l))
    parts = {t: [l for l in ls if l] for t, ls in sections(p.stdout).items()}
    for name in ("pod-a", "pod-b"):
        title = next(t for t in parts if t.startswith(f"source {name}.json (pid "))
        assert parts[title][-1] == f"holds most: {human(own[name]['held_bytes'])} {leak}"


def test_merged_json_has_the_leak_first_with_each_pods_part(pods_in_windows):
    dumps, leak, _, own = pods_in_windows
    p = report("--merge", "--format", "json", dumps["pod-a"], dumps["pod-b"])
    assert p.returncode == 0, p.stderr
    recs = records(p.stdout)
    first = next(r for r in recs if r["type"] == "site")
    assert first["location"] == leak
    assert first["held_bytes"] == own["pod-a"]["held_bytes"] + own["pod-b"]["held_bytes"]
    assert [(s["source"], s["held_bytes"], s["live_bytes"]) for s in first["sources"]] == [
        (f"{n}.json", own[n]["held_bytes"], own[n]["live_bytes"]) for n in ("pod-a", "pod-b")]
    assert abs(first["sources"][0]["share"] - 0.75) < 0.01
    assert [r["source"] for r in recs if r["type"] == "process"] == ["pod-a.json", "pod-b.json"]


@pytest.mark.skipif(PROTOC is None, reason="protoc not installed")
def test_merged_pprof_sums_the_leak_line_and_labels_each_pods_part(pods_in_windows, tmp):
    dumps, leak, _, own = pods_in_windows
    out = tmp / "merged.pb.gz"
    p = report("--merge", "--format", "pprof", "-o", str(out), dumps["pod-a"], dumps["pod-b"])
    assert p.returncode == 0, p.stderr
    by_source = {}
    for fn, values, labels in decode_samples(out):
        if fn.split(" in ")[0] == leak:
            by_source[labels["source"]] = by_source.get(labels["source"], 0) + values["held_space"]
    for name in ("pod-a", "pod-b"):
        assert abs(by_source[f"{name}.json"] - own[name]["held_bytes"]) <= ROUNDING, (name, by_source)
    if GO is None:
        return
    # what an operator runs: go tool pprof names the leak first, summed;
    # -tags splits the profile by pod, -tagfocus keeps one pod's part
    # (pprof's kB and MB are 1024 and 1024^2 bytes, printed to 3 digits)
    unit = {"B": 1, "kB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}

    def top(*args):
        p = run([GO, "tool", "pprof", "-top", "-sample_index=held_space", *args, str(out)], timeout=120)
        assert p.returncode == 0, p.stderr
        m = re.search(r"^\s+([\d.]+)(B|kB|MB|GB)\s+[\d.]+%\s+[\d.]+%\s+\S+\s+\S+\s+(.+)$", p.stdout, re.M)
        return float(m.group(1)) * unit[m.group(2)], m.group(3).split(" in ")[0]
    held = own["pod-a"]["held_bytes"] + own["pod-b"]["held_bytes"]
    for args, want in (((), held), (("-tagfocus=source=pod-b.json",), own["pod-b"]["held_bytes"])):
        flat, name = top(*args)
        assert name == leak and abs(flat - want) <= 0.005 * want, (args, flat, want)
    tags = run([GO, "tool", "pprof", "-tags", str(out)], timeout=120)
    assert tags.returncode == 0, tags.stderr
    assert re.findall(r"\(\s*[\d.]+%\): (\S+)", tags.stdout) == ["pod-a.json", "pod-b.json"], tags.stdout


def test_merged_html_names_the_leak_and_both_pods(pods_in_windows, tmp):
    dumps, leak, _, own = pods_in_windows
    out = tmp / "merged.html"
    p = report("--merge", "--format", "html", "-o", str(out), dumps["pod-a"], dumps["pod-b"])
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    apps = re.search(r'<table id="apps">.*?</table>', page, re.S).group(0)
    first = re.search(r'<td class="loc" title="([^"]+)">.*?<div class="sources"[^>]*>([^<]+)</div>', apps)
    assert first.group(1) == leak
    assert first.group(2) == split_words("sources", 2, [("pod-a.json", own["pod-a"]["held_bytes"]),
                                                         ("pod-b.json", own["pod-b"]["held_bytes"])])


@needs_ptrace
def test_keep_dumps_and_a_preloaded_pods_dump_merge_by_live(tmp):
    """Three pods (200, 100 and 50 requests): two attached with --keep and
    dumped with --dump --gc, one run under mwrap's preload, its dump
    written as it exits (no held split: taken at exit, its garbage maybe
    still live).  The merge ranks
    by live bytes, says why, and puts the leak line first with all three
    pods' bytes."""
    procs = []
    try:
        (a, leak, garbage), (b, _, _) = start_pod(procs), start_pod(procs)
        c_dump = tmp / "pod-c.json"
        c, _, _ = start_pod(procs, env={"MWRAP": f"dump_path:{c_dump},dump_format:json"}, argv=(MWRAP, "ruby"))
        paths = {}
        for name, pod, n in (("pod-a", a, 200), ("pod-b", b, 100)):
            assert attach(["-p", str(pod.pid), "--keep"]).returncode == 0
            serve(pod, n)
            paths[name] = tmp / f"{name}.json"
            d = attach(["-p", str(pod.pid), "--dump", "--gc", "--format=json", "-o", str(paths[name])])
            assert d.returncode == 0, d.stderr
            assert attach(["-p", str(pod.pid), "--detach"]).returncode == 0
        # a text report is not a dump
        text = tmp / "pod-a.txt"
        assert attach(["-p", str(a.pid), "--keep"]).returncode == 0
        assert attach(["-p", str(a.pid), "--dump", "-o", str(text)]).returncode == 0
        assert attach(["-p", str(a.pid), "--detach"]).returncode == 0
        # its garbage is live at exit unless a GC ran: in flight, at most
        # 100 strings, fewer bytes than the leak's in all three
        serve(c, 50, garbage=2)
        for pod in (a, b, c):
            assert pod.finish()[0] == 0
    finally:
        stop_all(procs)
    paths["pod-c"] = c_dump
    own = {n: parse_json_dump(open(p).read())[1][leak] for n, p in paths.items()}
    for name, n in (("pod-a", 200), ("pod-b", 100), ("pod-c", 50)):
        assert n * SIZE <= own[name]["live_bytes"] <= n * SIZE + SLACK, name
    p = report("--merge", "--top", "0", *(str(paths[n]) for n in ("pod-a", "pod-b", "pod-c")))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert ("rows rank by live bytes: not every source splits held from in flight "
            "(pod-c.json: taken as the process exited)") in lines
    assert first_source_line(p.stdout) == leak
    live = sum(o["live_bytes"] for o in own.values())
    assert 350 * SIZE <= site_value(lines, leak, "live_bytes") == live <= 350 * SIZE + 3 * SLACK
    split = under_site(p.stdout, leak)[0]
    assert split == split_words("sources", 3, [(f"{n}.json", own[n]["live_bytes"])
                                               for n in ("pod-a", "pod-b", "pod-c")])
    assert ["(57%)", "(29%)", "(14%)"] == re.findall(r"\(\d+%\)", split)
    assert site_value(lines, garbage, "live_bytes") <= 100 * SIZE + SLACK
    # the same pods, only the two with held bytes: ranked by held
    p = report("--merge", str(paths["pod-a"]), str(paths["pod-b"]))
    assert p.returncode == 0 and "rows rank by live bytes" not in p.stdout
    assert site_value(p.stdout.splitlines(), leak, "held_bytes") == own["pod-a"]["held_bytes"] + \
        own["pod-b"]["held_bytes"]
    bad = report("--merge", str(paths["pod-a"]), str(text))
    assert bad.returncode == 3 and f"mwrap-report: {text}:1: not a dump line" in bad.stderr, bad.stderr
    one = report("--merge", str(paths["pod-a"]))
    assert one.returncode == 2 and "--merge wants two dumps or more (1 given)" in one.stderr
