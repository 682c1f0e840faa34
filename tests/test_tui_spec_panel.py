"""Speculation off: the acceptance panel folds and the others share the row. It comes and goes
with the trials, so it is a class of that panel (restyled alone), not of the screen (a screen
class restyles every widget, ~25 ms each time)."""

from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import ServerInfo
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.dashboard import DashboardScreen

URL = "http://127.0.0.1:30000"


async def test_acceptance_panel_folds_without_speculation_and_no_screen_restyle(monkeypatch):
    session = Session(title="spec", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.dashboard
        panel = screen.query_one("#acceptance")
        throughput = screen.query_one("#throughput")
        restyles: list[object] = []
        real = DashboardScreen.update_node_styles
        monkeypatch.setattr(DashboardScreen, "update_node_styles",
                            lambda self, *a, **k: (restyles.append(self), real(self, *a, **k))[1])
        assert panel.display  # not known yet: shown
        wide = throughput.size.width

        await publish(pilot, session.bus, ServerInfo(url=URL, version="0.5.23"))
        await pilot.pause()
        assert not panel.display and throughput.size.width > wide  # folded; the row is shared

        await publish(pilot, session.bus, ServerInfo(url=URL, version="0.5.23", speculative_algorithm="EAGLE3"))
        await pilot.pause()
        # back, with the per-position panel under it in the same column (tests/test_tui_spec_positions.py)
        positions = screen.query_one("#spec-positions")
        assert panel.display and throughput.size.width == wide
        assert positions.region.x == panel.region.x and positions.region.y > panel.region.y
        assert restyles == []  # the screen was never restyled for it
