"""A recording as one self-contained HTML page: the Markdown report's content (facts, ledger,
findings, runs, alerts with their tracebacks folded, GPU peaks) with its SVG charts inline and
its CSS inline, so the file can be mailed or attached to a ticket and opened anywhere, offline.

The page is inert. Every text from the recording is escaped once as Markdown
(:mod:`tuiapp.record.markdown`); the Markdown is then rendered by markdown-it-py (CommonMark
plus tables, the library Textual already uses) with raw HTML, links and images turned off, so
even a text that escaped the escaping renders as text. The report's own folds and charts are
put in by markers that carry a random nonce, which no recorded text can know. A
Content-Security-Policy meta tag is the second wall: no script, no fetch, no frame, no form;
only the page's own style sheet (by its hash).
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets

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
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
{body}
</body>
</html>
"""


def content_security_policy(css: str) -> str:
    """Nothing may load or run: the one inline style sheet is allowed by its hash."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'sha256-{digest}'; img-src 'none'; script-src 'none'; "
            "base-uri 'none'; form-action 'none'")


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    # nothing in a report links anywhere; its charts are inlined below, never fetched
    md.disable(["link", "image", "autolink"])
    return md


def build_html(rec: Recording) -> str:
    nonce = secrets.token_hex(12)
    folds: list[str] = []

    def folded(summary: str, body: list[str]) -> list[str]:
        folds.append(summary)
        return [f"tuiappfold{nonce}open{len(folds) - 1}", "", *body, "", f"tuiappfold{nonce}close", ""]

    markdown, svgs = build_report(rec, lambda suffix: f"chart-{nonce}-{suffix}.svg", folded)
    body = _renderer().render(markdown)
    for k, summary in enumerate(folds):
        body = body.replace(f"<p>tuiappfold{nonce}open{k}</p>",
                            f"<details><summary>{html.escape(summary)}</summary>", 1)
    body = body.replace(f"<p>tuiappfold{nonce}close</p>", "</details>")
    for name, svg in svgs.items():
        # the report's own image line, as the renderer prints it with images off
        for line in markdown.splitlines():
            if line.startswith("![") and line.endswith(f"]({name})"):
                alt = line[2:-len(f"]({name})")]
                shown = html.escape(f"![{alt}]({name})", quote=False)
                # the chart's own title and the heading above it name it: no caption
                body = body.replace(f"<p>{shown}</p>",
                                    f'<figure aria-label="{html.escape(alt)}">{svg.strip()}</figure>', 1)
    title = html.escape(mask(str(rec.header.get("title") or rec.path.name)))
    css = _CSS.strip()
    return _PAGE.format(csp=content_security_policy(css), title=f"tuiapp report: {title}", css=css,
                        body=mask(body.strip()))
