"""The lean truecolor filter gives what Textual's gives, and stays in place across themes."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import MONOKAI
from session_helpers import idle  # tests/ is on the path
from textual.color import Color
from textual.filter import ANSIToTruecolor

from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.theme_files import load_themes
from tuiapp.tui.truecolor import LeanTruecolor


def test_same_segments_as_textual_s_filter():
    styles = [None, Style(), Style(color="red"), Style(color="#102030"), Style(color="#102030", dim=True),
              Style(color="red", dim=True), Style(bgcolor="blue"), Style(color="#ffffff", bgcolor="#000000"),
              Style(dim=True), Style(bold=True, color="color(200)", meta={"offset": (3, 4)})]
    segments = [Segment(f"s{i}", style) for i, style in enumerate(styles)]
    for background in (Color(10, 20, 30), Color(250, 250, 250)):
        assert LeanTruecolor(MONOKAI).apply(segments, background) == ANSIToTruecolor(MONOKAI).apply(segments, background)


def test_a_line_with_nothing_to_convert_comes_back_as_it_is():
    """Nearly every line of the dashboard (truecolor styles, no dim): no copy is made of it;
    one that needs converting still equals what Textual's filter gives."""
    plain = [Segment(f"s{i}", Style(color="#102030", bgcolor="#ffffff", meta={"offset": (i, 0)})) for i in range(5)]
    plain.append(Segment(" ", None))
    background = Color(10, 20, 30)
    assert LeanTruecolor(MONOKAI).apply(plain, background) is plain
    for tail in (Segment("x", Style(color="red")), Segment("y", Style(color="#102030", dim=True)),
                 Segment("z", Style(bgcolor="blue"))):
        mixed = [*plain, tail, *plain]
        out = LeanTruecolor(MONOKAI).apply(mixed, background)
        assert out is not mixed and out == ANSIToTruecolor(MONOKAI).apply(mixed, background)


async def test_the_app_keeps_the_lean_filter_after_a_theme_change():
    app = DashboardApp(Session(title="filters", sources=[idle]))
    async with app.run_test(size=(80, 24)) as pilot:
        assert not any(type(f) is ANSIToTruecolor for f in app._filters)
        assert any(isinstance(f, LeanTruecolor) for f in app._filters)
        app.theme = next(t.name for t in load_themes() if t.name != app.theme)
        await pilot.pause()
        assert any(isinstance(f, LeanTruecolor) for f in app._filters)
        assert not any(type(f) is ANSIToTruecolor for f in app._filters)
