"""Panels refresh only the lines whose strips changed: what the screen then shows (Textual's
cached lines plus the re-rendered ones) must be what a whole repaint shows."""

import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from session_helpers import idle, paint_in_slices  # tests/ is on the path

from tuiapp.commands.preview import read_events
from tuiapp.events import HostSample
from tuiapp.session import Session
from tuiapp.tui import textual_private
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.panel import Panel

EVENTS = read_events(Path(__file__).parent / "data" / "tui" / "dashboard.jsonl")


def screen_lines(app) -> list[list[tuple[str, object]]]:
    """The composed screen from the widgets' caches, as (text, style) runs per row."""
    strips = app.screen._compositor.render_strips()
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


_TERMINAL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|(\n)|([^\x1b\n])")


class Terminal:
    """What a terminal shows (characters only) after the updates the app sends it."""

    def __init__(self, rows: list[str]) -> None:
        self.cells = [[ch for ch in row] for row in rows]

    def feed(self, data: str) -> None:
        x = y = 0
        for params, final, _newline, ch in _TERMINAL.findall(data):  # a new line: a move follows
            if final == "H":
                row, col = (int(n) for n in params.split(";"))
                x, y = col - 1, row - 1
            elif ch:
                for cell in range(cell_len(ch)):
                    self.cells[y][x + cell] = ch if cell == 0 else ""
                x += cell_len(ch)

    def rows(self) -> list[str]:
        return ["".join(row) for row in self.cells]


def padded(rows, width: int) -> list[str]:
    return ["".join(text for text, _ in row).ljust(width) for row in rows]


@pytest.mark.skipif(not textual_private.fast("render"), reason="tests the render fast path, "
                    "which TUIAPP_TEXTUAL_FAST turned off (test_tui_textual_private checks it is on by default)")
@pytest.mark.slow
async def test_partial_line_refreshes_compose_the_same_screen_as_a_whole_repaint(monkeypatch):
    session = Session(title="lines", sources=[idle])
    app = DashboardApp(session)
    partial: list[tuple[str, int, int]] = []  # (panel, lines refreshed, panel height)
    refresh = Panel.refresh

    def spy(self, *regions, **kwargs):
        if regions:
            partial.append((type(self).__name__, len(regions), self.size.height))
        return refresh(self, *regions, **kwargs)

    monkeypatch.setattr(Panel, "refresh", spy)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        # the terminal: the screen as composed now, then every update sent after it (cells from
        # the first to the last that changed in a line, the rest of the line left as it was)
        terminal = Terminal(padded(screen_lines(app), 160))
        compositor = app.screen._compositor
        render_update = compositor.render_update

        def sent(*args, **kwargs):
            update = render_update(*args, **kwargs)
            if update is not None:
                terminal.feed(update.render_segments(app.console))
            return update

        compositor.render_update = sent
        # the host's figures (the GPU table's bottom border) move between slices, as they do live
        events = [event for start in range(0, len(EVENTS), 40) for event in (
            *EVENTS[start:start + 40], HostSample(t_s=EVENTS[min(start + 39, len(EVENTS) - 1)].t_s,
                                                  cpu_pct=start % 97, mem_used_bytes=(start + 1) << 30,
                                                  mem_total_bytes=64 << 30))]
        await paint_in_slices(pilot, session.bus, events, 41)
        shown = screen_lines(app)
        assert terminal.rows() == padded(shown, 160)
        for widget in app.screen.walk_children():
            widget.refresh()
        await pilot.pause()
        whole = screen_lines(app)
    assert any(n < height for _name, n, height in partial), partial  # some frames moved a few lines only
    assert {name for name, _n, _h in partial} >= {"GpuTable", "ThroughputPanel"}
    for y, (a, b) in enumerate(zip(shown, whole, strict=True)):
        assert a == b, f"row {y}: {''.join(t for t, _ in a)!r} != {''.join(t for t, _ in b)!r}"
