# SPDX-License-Identifier: MIT
"""--format=speedscope: the file passes the file-format schema that
speedscope's npm package ships (dist/release/file-format-schema.json,
fetched by `scripts/install-deps speedscope` into MWRAP_NPM_DIR, default
/var/cache/mwrap-attach/npm), holds live bytes by stack rooted at the
allocation and outermost frame first, and opens in the package's own
viewer in headless Chromium (the viewer loads a local profile as a
script: #localProfilePath=, what the package's `speedscope FILE` does)."""
import base64
import json
import os
import re

import pytest

from conftest import CHROMIUM, ROOT, attach, chromium, ptrace_allowed, run, start_ready

pytestmark = pytest.mark.fast  # make test-fast

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
NPM_DIR = os.environ.get("MWRAP_NPM_DIR", "/var/cache/mwrap-attach/npm")
RELEASE = os.path.join(NPM_DIR, "node_modules", "speedscope", "dist", "release")
SCHEMA = os.path.join(RELEASE, "file-format-schema.json")
VIEWER = os.path.join(RELEASE, "index.html")
APP = os.path.join(ROOT, "tests", "targets", "stacks_app.rb")
HELPER = os.path.join(ROOT, "tests", "targets", "gemlike", "helper.rb")

try:
    import jsonschema
except ImportError:
    jsonschema = None

needs_schema = pytest.mark.skipif(
    jsonschema is None or not os.path.exists(SCHEMA),
    reason=f"{'python3-jsonschema not installed' if jsonschema is None else f'no {SCHEMA}'} "
           "(scripts/install-deps speedscope)")

# the helper of a gem (under vendor/bundle/gems) called from two
# application lines, a line of the application's own, a native site
SRV = "/srv/app/app/controllers/uploads_controller.rb"
GEM = "/srv/app/vendor/bundle/gems/gemlike-1.0/lib/gemlike/helper.rb"
LIBZ = "/lib/x86_64-linux-gnu/libz.so.1(+0x3a1c)[0x7f00aa003a1c]"


def site(location, live, stack=None):
    s = {"type": "site", "location": location, "total_bytes": live, "allocations": live // 1024,
         "frees": 0, "freed_bytes": 0, "live_bytes": live, "live_count": live // 1024,
         "age_total": 0, "max_lifespan": 0}
    if stack:
        s["stack"] = stack
    return s


SITES = [
    site(f"{GEM}:9", 6291456, [f"{GEM}:9 in remember", f"{SRV}:13 in handle_upload",
                                f"{SRV}:40 in block in serve", f"{SRV}:38 in serve"]),
    site(f"{GEM}:9", 629146, [f"{GEM}:9 in remember", f"{SRV}:18 in handle_ping",
                               f"{SRV}:41 in block in serve", f"{SRV}:38 in serve"]),
    site(f"{SRV}:50", 2000000, [f"{SRV}:50 in own", f"{SRV}:38 in serve"]),
    site(LIBZ, 1048576)]


def speedscope_of(tmp, rows, *args):
    dump = tmp / "d.json"
    header = {"type": "header", "version": "0.1", "pid": 4242, "seconds": 30, "sample_bytes": 0}
    dump.write_text("".join(json.dumps(r) + "\n" for r in [header] + rows))
    out = tmp / "d.speedscope.json"
    p = run([REPORT, "--format=speedscope", "-o", str(out), "--force", *args, str(dump)])
    assert p.returncode == 0, p.stderr
    return out


def validate(doc):
    with open(SCHEMA) as f:
        jsonschema.validate(doc, json.load(f))


def stacks(doc, index):
    """Profile INDEX's samples as {(frame name, ... root first): weight}."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    prof = doc["profiles"][index]
    out = {}
    for sample, w in zip(prof["samples"], prof["weights"]):
        key = tuple(names[i] for i in sample)
        out[key] = out.get(key, 0) + w
    return out


@needs_schema
def test_speedscope_file_passes_the_schema(tmp):
    doc = json.loads(speedscope_of(tmp, SITES).read_text())
    validate(doc)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert [(p["type"], p["name"], p["unit"]) for p in doc["profiles"]] == [
        ("sampled", "live bytes, rooted at the allocation", "bytes"),
        ("sampled", "live bytes by stack, outermost frame first", "bytes")]
    total = 6291456 + 629146 + 2000000 + 1048576
    assert [(p["startValue"], p["endValue"]) for p in doc["profiles"]] == [(0, total)] * 2
    # rooted at the allocation: the gem's line by its application caller
    assert stacks(doc, 0) == {
        (f"{SRV}:13 in handle_upload", f"{SRV}:40 in block in serve", f"{SRV}:38 in serve"): 6291456,
        (f"{SRV}:18 in handle_ping", f"{SRV}:41 in block in serve", f"{SRV}:38 in serve"): 629146,
        (f"{SRV}:50 in own", f"{SRV}:38 in serve"): 2000000,
        (LIBZ,): 1048576}
    # the outermost frame first: as recorded, the leaf last
    assert stacks(doc, 1)[(f"{SRV}:38 in serve", f"{SRV}:40 in block in serve",
                           f"{SRV}:13 in handle_upload", f"{GEM}:9 in remember")] == 6291456
    frames = {f["name"]: f for f in doc["shared"]["frames"]}
    assert frames[f"{SRV}:13 in handle_upload"] == {"name": f"{SRV}:13 in handle_upload",
                                                    "file": SRV, "line": 13}
    assert frames[LIBZ] == {"name": LIBZ}
    # --focus names the application's frames; --min leaves out stacks
    doc = json.loads(speedscope_of(tmp, SITES, "--focus", SRV[:-5], "--min", "1000000").read_text())
    validate(doc)
    assert set(stacks(doc, 0)) == {
        (f"{SRV}:13 in handle_upload", f"{SRV}:40 in block in serve", f"{SRV}:38 in serve"),
        (f"{SRV}:50 in own", f"{SRV}:38 in serve"), (LIBZ,)}
    # the schema check can fail: a weight that is not a number
    doc["profiles"][0]["weights"][0] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


@needs_schema
def test_speedscope_of_dumps_without_stacks(tmp):
    """Sites as one-frame stacks: live bytes (our JSON), totals (mwrap's
    three columns, which have no frees)."""
    out = tmp / "new.speedscope.json"
    p = run([REPORT, "--format=speedscope", "-o", str(out), os.path.join(ROOT, "tests", "data", "new.json")])
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    validate(doc)
    assert stacks(doc, 0)[("app/cache.rb:20",)] == 12000000
    p = run([REPORT, "--format=speedscope", os.path.join(ROOT, "tests", "data", "mwrap3.txt")])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    validate(doc)
    assert doc["profiles"][0]["weights"] and all(w > 0 for w in doc["profiles"][0]["weights"])
    p = run([REPORT, "--format=speedscope", "--diff", os.path.join(ROOT, "tests", "data", "old.json"),
             os.path.join(ROOT, "tests", "data", "new.json")])
    assert p.returncode == 2 and "--diff prints text or json" in p.stderr


@needs_schema
@pytest.mark.skipif(ptrace_allowed() is not None, reason=f"ptrace not permitted: {ptrace_allowed()}")
def test_speedscope_straight_from_an_attach(spawn, tmp):
    """mwrap-attach --format=speedscope, default stacks (sampled about
    once per 64 KiB, scaled to each line's exact bytes): the helper's
    line rooted on top of its two callers at 3:1 (100 rounds of 256 KiB
    strings: within 15%, as in test_flame)."""
    t, f = start_ready(spawn, ["ruby", APP])
    upload, ping, keep = int(f["upload_line"]), int(f["ping_line"]), int(f["keep_line"])
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("serve 100 262144 3 1")
    t.expect("served", timeout=60)
    out = tmp / "live.speedscope.json"
    # --gc: every string kept has lived through a GC, so the bytes the
    # file weighs by (held, where a dump has them) are all of them
    p = attach(["-p", str(t.pid), "--dump", "--gc", "--format=speedscope", "-o", str(out)])
    assert p.returncode == 0, p.stderr
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    assert t.finish()[0] == 0
    doc = json.loads(out.read_text())
    validate(doc)
    by_caller = {}
    for names, w in stacks(doc, 0).items():
        if names[0].startswith(f"{HELPER}:{keep} in ") and len(names) > 1:
            loc = re.sub(r" in .*", "", names[1])
            by_caller[loc] = by_caller.get(loc, 0) + w
    up, pi = by_caller[f"{APP}:{upload}"], by_caller[f"{APP}:{ping}"]
    assert abs(up / pi / 3 - 1) <= 0.15, by_caller
    # the helper's bytes are the line's exact ones: 400 strings of 256 KiB
    # and the array holding them
    assert 400 * 262144 <= sum(by_caller.values()) <= 400 * 262144 * 1.01, by_caller


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
@pytest.mark.skipif(not os.path.exists(VIEWER), reason=f"no {VIEWER} (scripts/install-deps speedscope)")
def test_speedscope_file_opens_in_its_viewer(tmp):
    """The viewer of the npm package, from file://, given the profile as
    the package's command does (a script calling
    speedscope.loadFileFromBase64): it names the file and lists both
    profiles with their weights; its Sandwich view lists the frames with
    their bytes.  Screenshot: build/speedscope-view.png."""
    out = speedscope_of(tmp, SITES)
    loader = tmp / "profile.js"
    loader.write_text("speedscope.loadFileFromBase64(%s, %s)" % (
        json.dumps(out.name), json.dumps(base64.b64encode(out.read_bytes()).decode())))
    url = f"file://{VIEWER}#localProfilePath={loader}"
    flags = ["--window-size=1400,900", "--virtual-time-budget=10000"]
    p = chromium(flags + ["--dump-dom", url + "&view=sandwich"], tmp)
    assert p.returncode == 0, p.stderr
    dom = p.stdout
    assert "<title>mwrap live bytes, pid 4242 - speedscope</title>" in dom, dom[:2000]
    assert "live bytes, rooted at the allocation" in dom
    assert "live bytes by stack, outermost frame first" in dom
    # 9,969,178 bytes in all, as speedscope writes them (1024-based "MB")
    assert dom.count(">9.51 MB</td>") == 2
    # the Sandwich view's table: the uploads' line holds 63%
    rows = [re.match(r"<td[^>]*>([^<]*)<", r).group(1) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", dom)
            if r.endswith(f"</span>{SRV}:13 in handle_upload</td>")]
    assert rows == ["6.00 MB (63%)"], dom[-3000:]
    shot = os.path.join(ROOT, "build", "speedscope-view.png")
    os.makedirs(os.path.dirname(shot), exist_ok=True)
    p = chromium(flags + [f"--screenshot={shot}", url + "&view=left-heavy"], tmp)
    assert p.returncode == 0 and os.path.getsize(shot) > 10_000, p.stderr
