"""The dashboard's partial updates render only the rows they send: what they send must be
what Textual's own partial update sends, frame after frame, at every layout."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from session_helpers import idle, paint_in_slices  # tests/ is on the path
from textual._compositor import Compositor

from tuiapp.commands.preview import read_events
from tuiapp.session import Session
from tuiapp.tui import banded_update
from tuiapp.tui.app import DashboardApp

EVENTS = read_events(Path(__file__).parent / "data" / "tui" / "dashboard.jsonl")
# A cursor move that writes nothing before the next move, line feed or the end. Textual sends
# one where a span ends on the first cell of a chop it did not need to render (a container
# under the widget there); skipping the container leaves that chop empty, so no move.
_IDLE_MOVE = re.compile(r"\x1b\[\d+;\d+H(?=\n|$|\x1b\[\d+;\d+H)")


def sent(update, console) -> str:
    return _IDLE_MOVE.sub("", update.render_segments(console))


def test_bands_merge_regions_whose_rows_touch():
    from textual.geometry import Region

    bands = banded_update._bands([Region(0, 0, 10, 1), Region(50, 5, 10, 3), Region(0, 7, 40, 2),
                                  Region(0, 20, 5, 1), Region(3, 3, 0, 9)])
    assert bands == [Region(0, 0, 10, 1), Region(0, 5, 60, 4), Region(0, 20, 5, 1)]


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.slow
async def test_partial_updates_send_what_textual_sends(monkeypatch, size):
    session = Session(title="bands", sources=[idle])
    app = DashboardApp(session)
    compared: list[int] = []

    def both(self):
        dirty = self._dirty_regions.copy()
        ours = banded_update.render_partial_update(self)
        self._dirty_regions.update(dirty)
        theirs = Compositor.render_partial_update(self)
        if ours is None or theirs is None:
            assert ours is theirs
            return ours
        console = app.console
        assert sent(ours, console) == sent(theirs, console)
        compared.append(len(ours.spans))
        return ours

    monkeypatch.setattr(banded_update, "install",
                        lambda screen: setattr(screen._compositor, "render_partial_update",
                                                       both.__get__(screen._compositor)))
    async with app.run_test(size=size) as pilot:
        await paint_in_slices(pilot, session.bus, EVENTS, 25)
    assert len(compared) > 10 and sum(compared) > 100  # many frames, each a partial update


def test_falls_back_to_textuals_own_update_for_good_if_ours_raises():
    """Ours leans on the compositor's internals: should one move in a Textual release, a
    frame must still be drawn (by Textual's own update) rather than the app dying."""
    from textual.geometry import Region

    class Moved:  # a compositor whose span arithmetic changed under us
        def __init__(self):
            self._dirty_regions = {Region(0, 0, 5, 1)}
            self.cuts = [[0, 5]]
            self.visible_widgets = {}
            self.size = Region(0, 0, 5, 1).size
            self.own_calls = 0

        def _regions_to_spans(self, regions):
            raise AttributeError("renamed in a later Textual")

        def render_partial_update(self):
            self.own_calls += 1
            assert self._dirty_regions, "the dirty regions must reach Textual's own update"
            return "textual's own"

    compositor = Moved()
    banded_update.install(SimpleNamespace(_compositor=compositor))
    assert compositor.render_partial_update() == "textual's own"
    assert compositor.render_partial_update.__func__ is Moved.render_partial_update  # for good
    assert compositor.own_calls == 1
