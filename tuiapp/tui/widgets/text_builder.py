"""A Rich Text made in one pass from (piece, style) parts.

The panels build ~60 short styled lines a frame; ``Text.append`` checks and sanitises each
piece on its own (a third of the GPU table's render, a quarter of the perf panels'). Here the
pieces are joined once and their spans laid down by offset, exactly as ``Text.append`` would
lay them; text with control codes (a server's error message is hostile) takes Rich's own
append, so what it strips is stripped the same way.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Span, Text


class TextBuilder:
    __slots__ = ("parts", "styles")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.styles: list[Style | None] = []

    def add(self, piece: str, style: Style | None = None) -> None:
        if piece:
            self.parts.append(piece)
            self.styles.append(style)

    def text(self, overflow: str | None = None) -> Text:
        plain = "".join(self.parts)
        text = Text(plain, no_wrap=True, overflow=overflow)
        if len(text.plain) != len(plain):  # control codes stripped: the offsets are Rich's to work out
            text = Text(no_wrap=True, overflow=overflow)
            for piece, style in zip(self.parts, self.styles, strict=True):
                text.append(piece, style)
            return text
        spans = []
        start = 0
        for piece, style in zip(self.parts, self.styles, strict=True):
            end = start + len(piece)
            if style:
                spans.append(Span(start, end, style))
            start = end
        text._spans = spans
        return text


class LinesText(Text):
    """A panel's lines joined into one Text, the lines kept: the strips are made line by line
    from them (widgets/strips.py) without splitting the whole text again."""

    __slots__ = ("lines",)


def join_lines(lines: list[Text]) -> Text:
    """``Text("\\n", no_wrap=True).join(lines)``, span for span, without its per-span generator
    (half a 29-line panel's render)."""
    plain = "\n".join([line.plain for line in lines])
    text = LinesText(plain, no_wrap=True)
    if len(text.plain) != len(plain):  # not Rich's own lines (control codes): Rich's own join
        return Text("\n", no_wrap=True).join(lines)
    spans: list[Span] = []
    offset = 0
    for line in lines:
        length = len(line)
        if line.style:
            spans.append(Span(offset, offset + length, line.style))
        if offset:
            spans.extend([Span(offset + start, offset + end, style) for start, end, style in line._spans])
        else:
            spans.extend(line._spans)
        offset += length + 1
    text._spans = spans
    text.lines = lines
    return text
