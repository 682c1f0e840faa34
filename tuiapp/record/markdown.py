"""Small Markdown helpers for the report: table rows, numbers, durations, and the escaping of
every text that came from a server, a log or a file.

Such text is hostile: a log line can carry ``<script>``, ``<img onerror=...>``, a Markdown image
that a viewer would fetch, or a fence that closes the report's own code block. So it enters the
Markdown only through :func:`text` (inline: every character that starts markup is
backslash-escaped, which CommonMark renders as the character itself), :func:`code_span` and
:func:`code_block` (fences longer than any backtick run inside). A table cell is escaped unless
the report wrote it itself (:class:`Markup`).
"""

from __future__ import annotations

import html
import re
from typing import Any

from tuiapp.common.redact import mask

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that can start
# markup inline: HTML and autolinks (<), images (!), links ([ ]), entities (&), code (`),
# emphasis (* _ ~), table cells (|), and the backslash itself.
_INLINE_MARKUP = re.compile(r"([\\`*_\[\]<>!&|~#])")
_BACKTICKS = re.compile(r"`+")


class Markup(str):
    """Markdown the report wrote itself (``**Host**``, a :func:`code_span`): kept as it is."""


def _plain(value: Any) -> str:
    # secrets are masked before escaping: an escaped value would no longer match
    return mask("" if value is None else str(value)).replace("\r", " ").replace("\n", " ")


def text(value: Any) -> str:
    """``value`` as inline Markdown that renders as exactly its characters, on one line."""
    return _INLINE_MARKUP.sub(r"\\\1", _plain(value))


def _fence_len(value: str, least: int) -> int:
    return max([least, *(len(run) + 1 for run in _BACKTICKS.findall(value))])


def code_span(value: Any) -> Markup:
    """``value`` in a code span that no backtick inside can close."""
    body = _plain(value)
    fence = "`" * _fence_len(body, 1)
    if body.startswith("`") or body.endswith("`"):
        body = f" {body} "
    return Markup(f"{fence}{body}{fence}")


def code_block(value: Any) -> list[str]:
    """``value`` as a fenced code block (its lines kept) that no line inside can close."""
    body = mask("" if value is None else str(value)).rstrip()
    fence = "`" * _fence_len(body, 3)
    return [fence, *body.splitlines(), fence]


def fold(summary: str, body: list[str]) -> list[str]:
    """``body`` folded under a ``<details>`` line: the report's only HTML."""
    return [f"<details><summary>{html.escape(summary)}</summary>", "", *body, "", "</details>", ""]


def cell(value: Any) -> str:
    if isinstance(value, Markup):
        # `|` splits a table row even inside a code span: GFM reads `\|` there as `|`
        return value.replace("\n", " ").replace("|", "\\|").strip() or "-"
    return text(value).strip() or "-"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
