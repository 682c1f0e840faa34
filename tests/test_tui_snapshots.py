"""SVG snapshots of the dashboard at 80x24 and 160x48 in every theme, fed from a fixed event list.

Regenerate after a deliberate UI change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from pathlib import Path

import pytest

from tuiapp.commands.preview import preview_session, read_events
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.theme_files import load_themes

EVENTS = Path(__file__).parent / "data" / "tui" / "dashboard.jsonl"
EXPECTED = len(read_events(EVENTS))
THEMES = [t.name for t in load_themes()]


async def settle(pilot) -> None:
    app = pilot.app
    for _ in range(500):
        if app.store.applied >= EXPECTED and not len(app.events):
            break
        await pilot.pause(0.01)
    assert app.store.applied == EXPECTED
    app.dashboard.paint()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("theme", THEMES)
def test_dashboard(snap_compare, theme, size):
    app = DashboardApp(preview_session(EVENTS), theme=theme)
    assert snap_compare(app, terminal_size=size, run_before=settle)


class PausedReplay:
    """A replay held at 22:37 of 1:00:00, paused at x4: only the timeline reads it."""

    playing, speed, position_s, duration_s = False, 4.0, 1357.0, 3600.0

    def play(self) -> None: ...
    def pause(self) -> None: ...
    def set_speed(self, speed: float) -> None: ...
    def seek(self, position_s: float) -> None: ...
    def step(self) -> None: ...
    def next_alert(self) -> None: ...


def test_replay_dashboard_has_a_timeline_and_replay_keys(snap_compare):
    session = preview_session(EVENTS)
    session.replay = PausedReplay()
    assert snap_compare(DashboardApp(session), terminal_size=(80, 24), run_before=settle)
