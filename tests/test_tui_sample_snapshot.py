"""Snapshot of the dashboard at the end of the shipped campaign recording (80x24 and 160x48)."""

from pathlib import Path

import pytest

from tuiapp.commands.preview import file_source
from tuiapp.record.reading import read_recording
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp

SAMPLE = Path(__file__).resolve().parent.parent / "recordings" / "campaign.jsonl.gz"
EVENTS = read_recording(SAMPLE).events


async def settle(pilot) -> None:
    app = pilot.app
    for _ in range(1000):
        if app.store.applied >= len(EVENTS) and not len(app.events):
            break
        await pilot.pause(0.01)
    assert app.store.applied == len(EVENTS)
    app.dashboard.paint()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_campaign_end(snap_compare, size):
    session = Session(title="campaign", sources=[file_source(EVENTS)])
    assert snap_compare(DashboardApp(session), terminal_size=size, run_before=settle)
