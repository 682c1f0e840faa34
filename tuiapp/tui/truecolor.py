"""Textual's ANSI-to-truecolor line filter, minus the cache lookups for styles it leaves alone.

Textual runs every new strip through ANSIToTruecolor (when the theme is not an ANSI one),
which looks each segment's style up in an LRU cache of 1024. Our styles carry the cell's
offset (text selection reads it), so a screen holds thousands of distinct ones: the cache
misses nearly always (11 us a strip in the demo). A style with truecolor colours and no dim
comes back unchanged from that method anyway; only the others are handed to it, and a line
with none of them comes back as it is (~8 us instead of ~14 for 20 segments).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import ANSIToTruecolor

from tuiapp.tui import textual_private


def _converts(style: Style | None) -> bool:
    """Whether Textual's filter would change this style (an ANSI colour, or dim)."""
    if style is None:
        return False
    color, bgcolor = style.color, style.bgcolor
    return ((color is not None and (color.triplet is None or style.dim))
            or (bgcolor is not None and bgcolor.triplet is None))


class LeanTruecolor(ANSIToTruecolor):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        for index, (_text, style, control) in enumerate(segments):  # noqa: B007 - read after the loop
            if control is not None or _converts(style):
                break
        else:
            return segments  # nearly every line: nothing to convert, no copy of it made
        truecolor_style = self.truecolor_style
        background_rich_color = None
        out = segments[:index]
        for text, style, _control in segments[index:]:
            if _converts(style):
                if background_rich_color is None:
                    background_rich_color = background.rich_color
                style = truecolor_style(style, background_rich_color)
            out.append(Segment(text, style, None))
        return out


def lean_filters(filters: list) -> None:
    """Swap Textual's filter for the lean one in place, keeping its theme and enabled state."""
    for index, line_filter in enumerate(filters):
        if type(line_filter) is ANSIToTruecolor:
            filters[index] = LeanTruecolor(textual_private.terminal_theme(line_filter),
                                           enabled=line_filter.enabled)
