"""Reports of a recording whose texts are hostile (issue 40): log lines, trial names, the header,
a server's model path carry `<script>`, `<img onerror>`, `javascript:` links, Markdown images of
remote URLs and fences that try to close the report's own. The Markdown, its SVG charts and the
HTML page keep every such text as text. The `chromium` tier opens the page in headless Chromium
served by a local server that records every request, and checks that nothing ran (the scripts
would set a marker they build at run time) and nothing but the page was fetched; it also checks
that the page's Content-Security-Policy alone stops a script a bug let through."""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tuiapp.events import (
    Alert,
    GpuSample,
    LogLine,
    PointDone,
    RunDone,
    ServerInfo,
    TrialResult,
    TrialState,
)
from tuiapp.record.html_report import build_html
from tuiapp.record.reading import read_recording
from tuiapp.record.recorder import Recorder
from tuiapp.record.report import write_report
from tuiapp.sim.synthetic import campaign_events

# The marker only a running script can write: the text itself never holds it whole.
MARK_JS = "document.title='XSS'+'RAN'"
MARKER = "XSSRAN"


def payloads(base: str) -> list[str]:
    run = f"{MARK_JS};fetch('{base}/script-ran')"
    return [
        f"<script>{run}</script>",
        f'<img src=x onerror="{run}">',
        f'<img src="{base}/img-fetched">',
        f"javascript:{run}",
        f"[click me](javascript:{run})",
        f"![pic]({base}/md-image.png)",
        f"<{base}/autolink>",
        f'<iframe src="javascript:{run}"></iframe>',
        f'<svg onload="{run}"><circle r="1"/></svg>',
        f"<style>@import url({base}/css-import.css);</style>",
        f'<link rel="stylesheet" href="{base}/link.css">',
        f'<meta http-equiv="refresh" content="0;url={base}/refresh">',
        f"``` </details><script>{run}</script> ```",
        f"&lt;script&gt;{run}&lt;/script&gt; | a | cell",
    ]


def hostile_recording(path: Path, base: str) -> Path:
    bad = payloads(base)
    trial = f"t<script>{MARK_JS}</script>"
    header = {"title": bad[0], "host": bad[1], "argv": ["tuiapp", "attach", bad[4], bad[5]],
              "sglang_version": bad[6]}
    with Recorder(path, header) as r:
        events = list(campaign_events(60))
        t0 = events[0].t_s
        for event in events:
            r.write(event)
        t = events[-1].t_s
        r.write(ServerInfo(t_s=t0 + 1, url="http://127.0.0.1:1", model_path=bad[7], version=bad[8]))
        r.write(TrialState(t_s=t + 1, name=trial, index=9, total=9, phase="running", message=bad[9]))
        r.write(GpuSample(t_s=t + 1.5, index=0, name=bad[10], mem_used_bytes=1 << 30, mem_total_bytes=2 << 30,
                          pcie_rx_bytes_s=1e9, pcie_tx_bytes_s=1e9))
        for k, line in enumerate(bad):
            r.write(LogLine(t_s=t + 2 + k / 100, line_no=k + 1, text=line))
        for k in range(2):
            r.write(RunDone(t_s=t + 3 + k, run_index=100 + k, requests=4, errors=1, first_error=bad[11],
                            duration_s=1.0, decode_tok_s=80.0 + k, output_tok_s=70.0, trial=trial))
        r.write(PointDone(t_s=t + 5, point_index=0, concurrency=4, runs=2, requests=8, duration_s=2.0,
                          output_tok_s=100.0, ttft_p50_ms=10.0, ttft_p99_ms=20.0, tpot_p50_ms=5.0,
                          tpot_p99_ms=8.0, trial=trial))
        for k, line in enumerate(bad):
            r.write(Alert(t_s=t + 6 + k / 100, alert_kind="error", message=line, ranks=[0],
                          traceback="Traceback (most recent call last):\n" + "\n".join(bad), alert_id=900 + k))
        r.write(TrialResult(t_s=t + 8, name=trial, status="ok",
                            row={"runs_decode_tok_s": [80.0, 81.0], "mean_decode_tok_s": 80.5,
                                 "first_error": bad[12], "confound": bad[13], "diff": {bad[2]: {"baseline": bad[3]}}}))
    return path


class Elements(HTMLParser):
    """Every element and attribute of an HTML page, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def elements(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    return parser


# What the report itself writes: anything else came from a hostile text.
REPORT_TAGS = {"h1", "h2", "h3", "p", "ul", "li", "strong", "table", "thead", "tbody", "tr", "th", "td", "code",
               "pre", "details", "summary", "figure"}
SVG_TAGS = {"svg", "rect", "text", "line", "polyline", "circle"}
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body"}


def assert_inert(found: Elements, allowed: set[str], charts: set[str] = frozenset()) -> None:
    """Only ``allowed`` elements, no handler, no URL but the report's own ``charts`` beside it."""
    assert {tag for tag, _ in found.tags} <= allowed, {tag for tag, _ in found.tags} - allowed
    for tag, attrs in found.tags:
        if tag == "img" and attrs.get("src") in charts and set(attrs) == {"src", "alt"}:
            continue
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("src", "href", "xlink:href", "action", "formaction", "srcset"), (tag, name, value)
            assert "javascript:" not in (value or "").lower(), (tag, name, value)


def assert_all_shown_as_text(found: Elements, base: str) -> None:
    shown = "".join(found.text)
    for needle in ("<script>document.title='XSS'+'RAN'", '<img src=x onerror="', f'<img src="{base}/img-fetched">',
                   f"[click me](javascript:{MARK_JS}", f"![pic]({base}/md-image.png)", f"<{base}/autolink>",
                   "<iframe src=", "<svg onload=", "@import url(", '<meta http-equiv="refresh"', "``` </details>"):
        assert needle in shown, needle


BASE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    return hostile_recording(tmp_path_factory.mktemp("hostile") / "hostile.jsonl", BASE)


def test_the_markdown_report_keeps_hostile_text_as_text_even_in_a_viewer_that_renders_html(recording, tmp_path):
    written = write_report(read_recording(recording), tmp_path / "r.md")
    markdown = written[0].read_text()
    # A permissive viewer (raw HTML on, as VS Code's or a wiki's preview): only the report's own markup.
    found = elements(MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))
    charts = {p.name for p in written if p.suffix == ".svg"}
    assert_inert(found, REPORT_TAGS | {"img"}, charts)
    assert sum(tag == "img" for tag, _ in found.tags) == len(charts)
    assert_all_shown_as_text(found, BASE)
    # the report's own fold of the hostile traceback is whole: as many opened as closed
    lines = markdown.splitlines()
    assert sum(ln.startswith("<details><summary>") for ln in lines) == lines.count("</details>") >= 14


def test_the_svg_charts_hold_hostile_names_as_text(recording, tmp_path):
    written = write_report(read_recording(recording), tmp_path / "r.md")
    svgs = [p for p in written if p.suffix == ".svg"]
    assert len(svgs) >= 5
    seen = ""
    for path in svgs:
        root = ET.parse(path).getroot()  # well-formed XML: nothing broke out of a text element
        for el in root.iter():
            assert el.tag.split("}")[-1] in SVG_TAGS, (path.name, el.tag)
            assert not any(a.startswith("on") or a.endswith("href") for a in el.attrib), (path.name, el.attrib)
        seen += "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert f"t<script>{MARK_JS}</script>" in seen  # a trial name in a legend and a band label


def test_the_html_page_is_inert_and_shows_every_hostile_text(recording):
    page = build_html(read_recording(recording))
    found = elements(page)
    assert_inert(found, REPORT_TAGS | SVG_TAGS | PAGE_TAGS)
    head = found.tags[:4]  # html, head, the charset, then the policy before anything else
    assert head[3][0] == "meta" and head[3][1].get("http-equiv") == "Content-Security-Policy"
    csp = head[3][1]["content"]
    assert "default-src 'none'" in csp and "script-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert_all_shown_as_text(found, BASE)
    # the page's own folds and charts are there around the hostile text
    assert page.count("<details>") == page.count("</details>") >= 14 and page.count("<svg ") >= 6
    assert "tuiappfold" not in page and "chart-" not in page  # no marker left behind


def chromium() -> str:
    value = os.environ.get("TUIAPP_CHROMIUM")
    if not value:
        pytest.skip("Chromium tier off: set TUIAPP_CHROMIUM=/usr/bin/chromium (bash tools/chromium/setup.sh)")
    if not Path(value).is_file():
        pytest.fail(f"TUIAPP_CHROMIUM={value}: no such binary; bash tools/chromium/setup.sh")
    return value


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Site:
    """A local server for the page that records every request: a fetch of anything else is a leak."""

    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, fmt, *args):
                requests.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def site(tmp_path):
    (tmp_path / "site").mkdir()
    s = Site(tmp_path / "site")
    yield s
    s.close()


def render(binary: str, url: str, profile: Path) -> str:
    done = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom",
                           url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.chromium
def test_chromium_runs_nothing_and_fetches_nothing_from_a_hostile_recording(tmp_path, site):
    binary = chromium()
    rec = hostile_recording(tmp_path / "hostile.jsonl", site.base)
    page = build_html(read_recording(rec))
    (tmp_path / "site" / "report.html").write_text(page, encoding="utf-8")
    dom = render(binary, f"{site.base}/report.html", tmp_path / "profile")
    assert "<svg " in dom and "<h2>Alerts</h2>" in dom  # the page did render
    assert MARKER not in dom
    assert f"<title>tuiapp report: &lt;script&gt;{MARK_JS}" in dom  # the title, as text, unchanged
    assert [r for r in site.requests if r != "/favicon.ico"] == ["/report.html"], site.requests


@pytest.mark.chromium
def test_chromium_the_content_security_policy_alone_stops_a_script_that_got_through(tmp_path, site):
    """A second wall: the page with raw HTML forced into its body, as a bug in the escaping would."""
    binary = chromium()
    page = build_html(read_recording(hostile_recording(tmp_path / "h.jsonl", site.base)))
    # what a policy can stop (a meta refresh is a navigation, which no policy governs: the escaping's job)
    leak = "".join(payloads(site.base)[k] for k in (0, 1, 2, 7, 8, 9, 10))
    (tmp_path / "site" / "report.html").write_text(page.replace("<body>", "<body>" + leak, 1), encoding="utf-8")
    # the same page without its policy: the leak does run and fetch (so the check can fail)
    bare = page.replace("<body>", "<body>" + leak, 1)
    bare = "\n".join(line for line in bare.splitlines() if "Content-Security-Policy" not in line)
    (tmp_path / "site" / "bare.html").write_text(bare, encoding="utf-8")
    dom = render(binary, f"{site.base}/report.html", tmp_path / "p1")
    assert MARKER not in dom
    assert [r for r in site.requests if r != "/favicon.ico"] == ["/report.html"], site.requests
    bare_dom = render(binary, f"{site.base}/bare.html", tmp_path / "p2")
    assert MARKER in bare_dom and "/script-ran" in site.requests and "/img-fetched" in site.requests
