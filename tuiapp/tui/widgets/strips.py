"""A panel's Rich Text as Textual strips, made the way Textual's Content makes them, but cheaply.

Textual turns a widget's Rich Text into a Content and then into strips on every repaint; for the
GPU table (8 rows of ~100 spans) that was ~7 ms a frame on this box, most of the TUI's CPU.
Nearly all of it is per-segment style work whose result depends only on the span's style, the
widget's style and the cell's position (the position goes into the style's meta, which text
selection reads), and those repeat frame after frame. So the segments are built here with
Textual's own style arithmetic, memoised; the cells and styles come out as Textual's would
(tests/test_tui_strips.py compares them with ``Visual.to_strips``). Anything outside the
simple case the panels produce (a selection, control codes, blank lines, a string style, a
link, other alignment or wrapping rules) returns None and Textual renders it itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import pairwise

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.strip import Strip
from textual.style import Style

# Content strips these (without moving its spans) and expands tabs: leave such text to it.
_NOT_SIMPLE = re.compile(r"[\t\x07\x08\x0b\x0c\r]|\n\n|^\n|\n$")
_MAX_STYLES = 8192  # a few screens' worth of (style, x, y); more means the layout moved a lot


class StripMaker:
    """One per widget: the memo of finished segment styles, valid for one widget style."""

    def __init__(self) -> None:
        self._key: object = None
        self._styles: dict[tuple, RichStyle | None] = {}
        # y -> (line, its spans, width, strip): a frame moves a line or two of a panel, and a
        # strip made again for each of the others cost most of a paint (the charts' rows)
        self._lines: dict[int, tuple[str, tuple, int, Strip]] = {}

    def strips(self, widget, text: object, width: int, height: int) -> list[Strip] | None:
        """``text`` as the strips Textual would render for ``widget``, or None to let it."""
        if not isinstance(text, Text) or widget.text_selection is not None:
            return None
        rules = widget.styles
        if (rules.get("text_wrap", "wrap") != "nowrap" or rules.get("text_overflow", "fold") != "ellipsis"
                or rules.get("text_align", "left") not in ("left", "start") or rules.get("line_pad", 0)
                or rules.content_align != ("left", "top")):
            return None
        plain = text.plain
        if _NOT_SIMPLE.search(plain) or (text.style and isinstance(text.style, str)):
            return None
        if width <= 0:
            return []
        base = widget.visual_style
        ansi_theme = widget.app.ansi_theme
        key = (base, ansi_theme)
        if key != self._key or len(self._styles) > _MAX_STYLES:
            self._key = key
            self._styles = {}
            self._lines = {}
        kept_lines = getattr(text, "lines", None)  # text_builder.join_lines: the panel's own lines
        per_line = None
        if kept_lines is not None and not text.style and plain.count("\n") + 1 == len(kept_lines):
            lines_in = kept_lines[:height] if height is not None else kept_lines
            lines = [line.plain for line in lines_in]
            per_line = [_own_spans(line, plain_line) for line, plain_line in zip(lines_in, lines, strict=True)]
            if None in per_line:  # a span past its line's end reaches the next line: the general case
                per_line = None
        if per_line is None:
            lines = plain.split("\n")[:height] if height is not None else plain.split("\n")
            per_line = [tuple(spans) for spans in _spans_per_line(text, lines)]
        made = self._lines
        out = []
        for y, (line, spans) in enumerate(zip(lines, per_line, strict=True)):
            kept = made.get(y)
            if kept is not None and kept[2] == width and kept[0] == line and kept[1] == spans:
                out.append(kept[3])  # the same cells in the same styles: the same strip
                continue
            strip = self._strip(line, spans, width, y, base, ansi_theme)
            if strip is None:
                return None
            made[y] = (line, spans, width, strip)
            out.append(strip)
        return out

    def _strip(self, line: str, spans, width: int, y: int, base: Style, ansi_theme) -> Strip | None:
        if cell_len(line) > width:  # Content.truncate with an ellipsis; spans cut at the end
            line = set_cell_size(line, width - 1) + "…"
            end = len(line)
            spans = [(start, min(stop, end), style) for start, stop, style in spans if start < end]
        memo = self._styles
        segments = []
        x = 0
        for start, stop, cover in _pieces(len(line), spans):
            k = (cover, x, y)
            style = memo.get(k, memo)
            if style is memo:
                style = memo[k] = _final_style(base, cover, x, y, ansi_theme)
            if style is None:  # a link or meta Textual would treat specially
                return None
            piece = line[start:stop]
            segments.append(Segment(piece, style))
            x += len(piece)
        return Strip(segments, cell_len(line))


def _own_spans(line: Text, plain: str) -> tuple | None:
    """One line's spans as _spans_per_line finds them in the joined text (its own style
    under them, empty ones dropped; a string style becomes None, "not simple"), or None
    for a span that runs past the line (in the joined text it reaches the next line)."""
    length = len(plain)
    spans = []
    if line.style and length:
        spans.append((0, length, None if isinstance(line.style, str) else line.style))
    for start, stop, style in line._spans:
        if stop > length:
            return None
        if stop > start:
            spans.append((start, stop, None if isinstance(style, str) else style))
    return tuple(spans)


def _spans_per_line(text: Text, lines: list[str]) -> list[list[tuple[int, int, RichStyle]]]:
    """Each line's spans in line-local offsets, in the Text's order (later ones on top), the
    Text's own style first (Content puts it under every span)."""
    starts = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    per_line: list[list] = [[] for _ in lines]
    spans = text._spans
    if text.style:
        spans = [(0, len(text.plain), text.style), *spans]
    for start, stop, style in spans:
        if isinstance(style, str):
            style = None  # resolved below to "not simple"
        first = max(0, bisect_right(starts, start) - 1)
        for i in range(first, len(lines)):
            line_start = starts[i]
            line_end = line_start + len(lines[i])
            if line_start >= stop:
                break
            s, e = max(start, line_start) - line_start, min(stop, line_end) - line_start
            if e > s:
                per_line[i].append((s, e, style))
    return per_line


def _pieces(length: int, spans: list[tuple[int, int, RichStyle]]):
    """(start, stop, styles covering it) for each run of a line between span edges."""
    if not all(a[1] <= b[0] for a, b in pairwise(spans)):  # spans on spans: the general case
        cuts = sorted({0, length, *(s for s, _, _ in spans), *(e for _, e, _ in spans)})
        for start, stop in pairwise(cuts):
            if stop > length:
                break
            yield start, stop, tuple(style for s, e, style in spans if s <= start and e >= stop)
        return
    pos = 0
    for start, stop, style in spans:  # the usual line: spans one after the other, gaps between
        if start > pos:
            yield pos, start, ()
        yield start, stop, (style,)
        pos = stop
    if pos < length:
        yield pos, length, ()


def _final_style(base: Style, cover: tuple, x: int, y: int, ansi_theme) -> RichStyle | None:
    """Content's arithmetic: base + (base + each span's style), with the cell offset in meta."""
    styles = [base]
    for rich in cover:
        if rich is None or rich.link or rich._meta:
            return None
        styles.append(Style.from_rich_style(rich, ansi_theme))
    return (base + Style.combine(styles)).rich_style_with_offset(x, y)
