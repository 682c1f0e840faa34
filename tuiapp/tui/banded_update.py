"""A screen's partial update that renders only the lines it sends.

Textual's compositor crops a partial update to the box around every dirty region, and then
renders every widget overlapping that box in full (all its visible lines) to send the dirty
lines alone. A dashboard frame moves the header's clock (row 0) and the log tail (the bottom
rows), so the box is the whole screen: every panel and container rendered every line again,
from its cache, and cut it into chops (~300 lines a frame at 160x48, for ~60 that changed).

Here the dirty regions are grouped into bands of rows that do not overlap, each widget
renders only the rows of a band where a dirty span reaches its columns (a panel beside the
one that changed renders nothing), and a widget that shows nowhere (a container its children
cover) is not rendered at all; everything else is Textual's own arithmetic (the same
chops, cuts and spans, front-most widget first). tests/test_tui_banded_update.py checks what
is sent against Textual's own partial update, frame by frame.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

from textual.geometry import Region

from tuiapp.tui import textual_private


def install(screen: Any) -> None:
    """Ours for this screen's partial updates, where the internals it needs were found at
    start (textual_private); if ours ever raises, Textual's own from then on."""
    if not textual_private.fast("banded"):
        return
    compositor = textual_private.compositor(screen)
    own = compositor.render_partial_update
    ours = MethodType(render_partial_update, compositor)

    def render():
        dirty = textual_private.dirty_regions(compositor).copy()
        try:
            return ours()
        except Exception:  # an internal that moved: a frame must still be drawn, right
            textual_private.dirty_regions(compositor).update(dirty)
            compositor.render_partial_update = own
            return own()

    compositor.render_partial_update = render


def _bands(regions) -> list[Region]:
    """The regions' boxes merged while their rows overlap or touch, top to bottom."""
    bands: list[list[int]] = []  # [x1, y1, x2, y2]
    for x, y, width, height in sorted(regions, key=lambda r: r.y):
        if not (width and height):
            continue
        if bands and y <= bands[-1][3]:
            band = bands[-1]
            band[0], band[2], band[3] = min(band[0], x), max(band[2], x + width), max(band[3], y + height)
        else:
            bands.append([x, y, x + width, y + height])
    return [Region(x1, y1, x2 - x1, y2 - y1) for x1, y1, x2, y2 in bands]


def _shown_widgets(self) -> list:
    """The visible widgets that show at least one chop, front to back (with region and clip).

    A container whose children cover it (the dashboard's rows and columns, the screen itself)
    never wins a chop, but Textual renders it anyway. Worked out from the regions alone, once
    per arrangement (the compositor makes a new visible-widget map whenever one changes)."""
    visible = self.visible_widgets
    kept = self.__dict__.get("_shown_widgets")
    if kept is not None and kept[0] is visible and kept[1] is self.cuts:
        return kept[2]
    cuts = self.cuts
    owned = [set() for _ in cuts]  # per row, the cuts a widget in front already has
    shown = []
    intersection = Region.intersection
    for widget, (region, clip) in visible.items():
        x, y, width, height = intersection(region, clip)
        wins = False
        for line_y in range(max(0, y), min(y + height, len(cuts))):
            row = owned[line_y]
            for cut in cuts[line_y][:-1]:
                if x <= cut < x + width and cut not in row:
                    row.add(cut)
                    wins = True
        if wins:
            shown.append((widget, (region, clip)))
    self._shown_widgets = (visible, cuts, shown)
    return shown


def render_partial_update(self):
    """The compositor's ``render_partial_update`` (a ChopsUpdate or None), band by band."""
    dirty = textual_private.dirty_regions(self)
    update_regions = dirty.copy()
    dirty.clear()
    if not update_regions:
        return None
    screen_region = self.size.region
    spans = list(self._regions_to_spans(update_regions))  # noqa: SLF001 - checked in textual_private
    spans_at: dict[int, list[tuple[int, int]]] = {}
    for y, x1, x2 in spans:
        spans_at.setdefault(y, []).append((x1, x2))
    cuts = self.cuts
    chops = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
    widgets = _shown_widgets(self)  # front to back
    intersection = Region.intersection
    for band in _bands(update_regions):
        band = intersection(band, screen_region)
        if not band:
            continue
        band_overlaps = band.overlaps
        band_top, band_bottom = band.y, band.bottom
        for widget, (region, clip) in widgets:
            if not band_overlaps(clip):
                continue
            x, y, width, height = intersection(region, clip)
            top, bottom = max(y, band_top), min(y + height, band_bottom)
            if not width or top >= bottom:
                continue
            # Only the lines where a span reaches the widget's columns: a panel beside the one
            # that changed shares the band's rows but sends nothing (a chop is sent where it meets
            # a span: from x1 up to and including x2, as ChopsUpdate.render_segments tests).
            right = x + width
            lines = [line_y for line_y in range(top, bottom)
                     if any(x1 < right and x <= x2 for x1, x2 in spans_at.get(line_y, ()))]
            if not lines:
                continue
            top, bottom = lines[0], lines[-1] + 1
            # every visible column (a chop runs from cut to cut), only those rows
            strips = widget.render_lines(Region(x - region.x, top - region.y, width, bottom - top))
            last_cut = right
            for line_y, strip in zip(range(top, bottom), strips, strict=False):
                if line_y not in spans_at:
                    continue
                chops_line = chops[line_y]
                final_cuts = [cut for cut in cuts[line_y] if last_cut >= cut >= x]
                get = chops_line.get
                for cut, piece in zip(final_cuts, strip.divide([cut - x for cut in final_cuts[1:]]), strict=False):
                    if get(cut) is None:  # front to back: the first strip for a cut wins
                        chops_line[cut] = piece
    chop_ends = [cut_set[1:] for cut_set in cuts]
    return textual_private.private("ChopsUpdate")(chops, spans, chop_ends)
