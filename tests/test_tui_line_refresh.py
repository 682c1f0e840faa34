"""Panels refresh only the lines whose strips changed: what the screen then shows (Textual's
cached lines plus the re-rendered ones) must be what a whole repaint shows."""

from pathlib import Path

import pytest
from session_helpers import idle, paint_in_slices  # tests/ is on the path

from tuiapp.commands.preview import read_events
from tuiapp.session import Session
from tuiapp.tui import textual_private
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.panel import Panel

EVENTS = read_events(Path(__file__).parent / "data" / "tui" / "dashboard.jsonl")


def screen_lines(app) -> list[list[tuple[str, object]]]:
    """The composed screen from the widgets' caches, as (text, style) runs per row."""
    strips = app.screen._compositor.render_strips()
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


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
        await paint_in_slices(pilot, session.bus, EVENTS, 40)
        shown = screen_lines(app)
        for widget in app.screen.walk_children():
            widget.refresh()
        await pilot.pause()
        whole = screen_lines(app)
    assert any(n < height for _name, n, height in partial), partial  # some frames moved a few lines only
    assert {name for name, _n, _h in partial} >= {"GpuTable", "ThroughputPanel"}
    for y, (a, b) in enumerate(zip(shown, whole, strict=True)):
        assert a == b, f"row {y}: {''.join(t for t, _ in a)!r} != {''.join(t for t, _ in b)!r}"
