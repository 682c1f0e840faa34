"""`tuiapp report FILE --html OUT`: one self-contained page (issue 34). The default suite checks
the file; the `chromium` tier (TUIAPP_CHROMIUM=/usr/bin/chromium, Debian's package) renders it
in headless Chromium served from a local server that logs every request."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tuiapp.record.html_report import build_html
from tuiapp.record.reading import read_recording

CAMPAIGN = Path(__file__).parent.parent / "recordings" / "campaign.jsonl.gz"
EXTERNAL = re.compile(r"""(?:src|href|xlink:href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import""",
                      re.IGNORECASE)


@pytest.fixture(scope="module")
def page() -> str:
    return build_html(read_recording(CAMPAIGN))


def test_the_page_holds_the_reports_content_inline(page):
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert page.count("<svg ") == 5  # tok/s, acceptance, PCIe RX, PCIe TX, memory
    assert "<img" not in page and not EXTERNAL.search(page)
    for section in ("Ledger", "Findings", "Runs", "Alerts", "GPUs (peaks)", "Charts"):
        assert f"<h2>{section}</h2>" in page
    for trial in ("old-baseline", "new-baseline", "eagle3", "custom-allreduce-pcie", "ep-flashinfer-a2a"):
        assert f"<td>{trial}</td>" in page
    # every traceback folded, with its text escaped inside
    folds = re.findall(r"<details><summary>(\w+) at [\d:]+: traceback</summary>", page)
    assert set(folds) >= {"oom", "keyerror", "jit_arch"}
    assert "Traceback (most recent call last):" in page


def test_report_html_writes_one_file_and_refuses_a_bad_path(tmp_path):
    out = tmp_path / "campaign.html"
    done = subprocess.run([sys.executable, "-m", "tuiapp", "report", str(CAMPAIGN), "--html", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaign.html"]
    bad = subprocess.run([sys.executable, "-m", "tuiapp", "report", str(CAMPAIGN), "--html",
                          str(tmp_path / "no" / "r.html")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "no directory" in bad.stderr


def chromium() -> str:
    value = os.environ.get("TUIAPP_CHROMIUM")
    if not value:
        pytest.skip("Chromium tier off: set TUIAPP_CHROMIUM=/usr/bin/chromium (Debian's chromium package)")
    if not Path(value).is_file():
        pytest.fail(f"TUIAPP_CHROMIUM={value}: no such binary; apt-get install chromium")
    return value


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


@pytest.mark.chromium
def test_chromium_renders_every_chart_and_fetches_nothing(tmp_path, page):
    binary = chromium()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "report.html").write_text(page, encoding="utf-8")
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path / "site"), **kwargs)

        def log_message(self, fmt, *args):
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/report.html"
    try:
        def browse(*args: str) -> subprocess.CompletedProcess:
            profile = tmp_path / f"profile{len(requests)}"
            return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args, url],
                                  capture_output=True, text=True, timeout=120)

        dom = browse("--virtual-time-budget=2000", "--dump-dom")
        shot = tmp_path / "report.png"
        shown = browse("--window-size=1200,3000", f"--screenshot={shot}")
    finally:
        server.shutdown()
        server.server_close()
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg ") == 5 and "<h2>Charts</h2>" in dom.stdout
    # the charts drew: every polyline has its points in the rendered DOM
    assert dom.stdout.count("<polyline") >= 5
    assert shown.returncode == 0 and shot.stat().st_size > 50_000, shown.stderr[-2000:]
    # the page itself was the only thing asked for (a browser's own favicon probe aside)
    assert [r for r in requests if r != "/favicon.ico"] == ["/report.html", "/report.html"], requests
    keep = os.environ.get("TUIAPP_KEEP_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / "html-report.png")
