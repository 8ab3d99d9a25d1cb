# SPDX-License-Identifier: MIT
"""The HTML report: one self-contained page, looked at in headless
Chromium (its sort script runs; the chart is drawn; a screenshot is
saved in the test's tmp dir)."""
import os
import re

import pytest

from conftest import (CHROMIUM, LEAK_RB, ROOT, attach, chromium, ptrace_allowed, run,
                      start_leak)

REPORT = os.path.join(ROOT, "scripts", "mwrap-report")
NEW = os.path.join(ROOT, "tests", "data", "new.json")
pytestmark = [pytest.mark.fast, pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")]


def table_locations(dom):
    body = dom.split('<tbody>', 1)[1]
    return [re.sub(r"<[^>]+>", "", m) for m in
            re.findall(r'<td class="loc"[^>]*>(.*?)</td>', body)]


def test_html_report_in_chromium(tmp):
    page = tmp / "report.html"
    p = run([REPORT, "--format", "html", "-o", str(page), NEW])
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    # self-contained: nothing fetched from anywhere
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<script src" not in html and "<link" not in html
    p = chromium(["--dump-dom", f"file://{page}"], tmp)
    assert p.returncode == 0, p.stderr
    assert 'data-sorted="live"' in p.stdout
    assert table_locations(p.stdout)[0] == "app/cache.rb:20"
    assert p.stdout.count('class="seg"') == 3          # three bars in the chart
    p = chromium(["--dump-dom", f"file://{page}#sort=total"], tmp)
    assert 'data-sorted="total"' in p.stdout
    assert table_locations(p.stdout)[:2] == ["app/render.rb:15", "app/cache.rb:20"]
    shot = tmp / "report.png"
    p = chromium([f"--screenshot={shot}", "--window-size=1100,700", f"file://{page}"], tmp)
    assert p.returncode == 0 and shot.stat().st_size > 5000


@pytest.mark.skipif(ptrace_allowed() is not None, reason="ptrace not permitted")
def test_html_straight_from_an_attach(spawn, tmp):
    t, line, _ = start_leak(spawn)
    assert attach(["-p", str(t.pid), "--keep"]).returncode == 0
    t.send("leak 300 10000")
    t.expect("leaked")
    page = tmp / "attach.html"
    p = attach(["-p", str(t.pid), "--dump", "--format=html", "-o", str(page)])
    assert p.returncode == 0, p.stderr
    assert attach(["-p", str(t.pid), "--detach"]).returncode == 0
    p = chromium(["--dump-dom", f"file://{page}"], tmp)
    assert table_locations(p.stdout)[0] == f"{LEAK_RB}:{line}"
    assert f"{os.path.basename(LEAK_RB)}:{line}" in p.stdout      # in the chart too
    assert t.finish()[0] == 0


def test_html_carries_the_scan_and_the_object_view(tmp):
    page = os.path.join(tmp, "scanned.html")
    p = run([REPORT, "--format", "html", "-o", page, os.path.join(ROOT, "tests", "data", "scanned.json")])
    assert p.returncode == 0, p.stderr
    html = open(page).read()
    assert '<th data-col="unreferenced">' in html
    # 75% of the site's 2,000,000 live bytes: its scaled estimate
    assert '<td data-v="1500000" title="1,500,000 bytes">1.4 MiB</td>' in html
    assert "memory side by side" in html and "instruction sequences (4200 iseqs)" in html
    assert "pointer scan: 1.4 MiB of 2.9 MiB live nothing points to" in html
