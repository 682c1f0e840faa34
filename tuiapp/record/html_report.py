"""A recording as one self-contained HTML page: the Markdown report's content (facts, ledger,
findings, runs, alerts with their tracebacks folded, GPU peaks) with its SVG charts inline and
its CSS inline, so the file can be mailed or attached to a ticket and opened anywhere, offline.

The Markdown is rendered by markdown-it-py (CommonMark plus tables; raw HTML on, for the
report's own ``<details>`` folds), the library Textual already uses for Markdown.
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from tuiapp.common.redact import mask
from tuiapp.record.reading import Recording
from tuiapp.record.report import build_report

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1100px;
       padding: 0 1rem; color: #1d1d1f; line-height: 1.45; }
h1 { font-size: 1.6rem; border-bottom: 2px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .85rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
th:empty { padding: 0; border: none; background: none; }
tr:nth-child(even) td { background: #fbfcfd; }
code { background: #f6f8fa; padding: 0 .2rem; border-radius: 3px; font-size: .85em; }
pre { background: #f6f8fa; padding: .75rem; overflow-x: auto; border-radius: 6px; font-size: .8rem; }
pre code { background: none; padding: 0; }
details { margin: .4rem 0; }
summary { cursor: pointer; font-weight: 600; }
figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
{body}
</body>
</html>
"""


def build_html(rec: Recording) -> str:
    markdown, svgs = build_report(rec, lambda suffix: f"chart-{suffix}.svg")
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = renderer.render(markdown)
    for name, svg in svgs.items():
        pattern = re.compile(r'<img src="' + re.escape(name) + r'" alt="([^"]*)"\s*/?>')
        # the chart's own title and the heading above it name it: no caption
        body = pattern.sub(lambda m, svg=svg: f'<figure aria-label="{m.group(1)}">{svg.strip()}</figure>', body)
    title = html.escape(markdown.splitlines()[0].lstrip("# ").strip())
    return mask(_PAGE.format(title=title, css=_CSS.strip(), body=body.strip()))
