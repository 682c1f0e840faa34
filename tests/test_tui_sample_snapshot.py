"""The dashboard at the end of the shipped campaign recording: snapshots at four terminal
sizes, and from 100 columns up the outcome line and every verdict whole on screen."""

from pathlib import Path

import pytest

from tuiapp.commands.preview import file_source
from tuiapp.record.reading import read_recording
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.header_bar import HeaderBar
from tuiapp.tui.widgets.ledger_table import LedgerTable

SAMPLE = Path(__file__).resolve().parent.parent / "recordings" / "campaign.jsonl.gz"
EVENTS = read_recording(SAMPLE).events
SIZES = [(80, 24), (120, 36), (160, 48), (200, 60)]


async def settle(pilot) -> None:
    app = pilot.app
    for _ in range(1000):
        if app.store.applied >= len(EVENTS) and not len(app.events):
            break
        await pilot.pause(0.01)
    assert app.store.applied == len(EVENTS)
    app.dashboard.paint()
    await pilot.pause()


def app_at_end() -> DashboardApp:
    return DashboardApp(Session(title="campaign", sources=[file_source(EVENTS)]))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_campaign_end(snap_compare, size):
    assert snap_compare(app_at_end(), terminal_size=size, run_before=settle)


def screen_lines(widget) -> list[str]:
    return [widget.render_line(y).text for y in range(widget.size.height)]


@pytest.mark.parametrize("size", [(100, 30), (120, 36), (160, 48), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_outcome_line_and_verdicts_are_whole_from_100_columns(size):
    app = app_at_end()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        store = app.store
        # the figures come from the ledger rows themselves: 4 of 8 trials worked, new-baseline won
        assert store.outcome() == ("campaign done: 4 ok, 4 failed, 6 dead ends; "
                                   "best new-baseline 89.5 tok/s +9.2% vs old-baseline")
        header = screen_lines(app.dashboard.query_one(HeaderBar))
        assert "DONE" in header[0] and "FAILED" not in header[0] and "…" not in header[0]
        shown = header[0].split("DONE", 1)[1].strip()
        assert shown.startswith("campaign done: 4 ok, 4 failed, 6 dead ends; best new-baseline 89.5 tok/s +9.2%")
        if size[0] >= 120:
            assert shown == store.outcome()
        ledger = screen_lines(app.dashboard.query_one(LedgerTable))
        assert len([line for line in ledger if line.strip()]) >= len(store.trials)  # every trial on screen
        for row in store.trials.values():
            verdict = row.result.row.get("verdict") or "dead end"
            line = next(line for line in ledger if row.result.status in line and (row.name[:8] in line))
            assert line.rstrip().endswith(verdict), (row.name, line)
            if row.result.row.get("delta_pct") is not None:
                assert f"{row.result.row['delta_pct']:+.1f}%" in line
