"""The trials ledger: a cursor that follows the running trial until the ledger has focus, keys
and clicks that move it, Enter (or a click on the cursor's line) opens the trial, and a frame
refreshes only the lines that changed, never laying the screen out when a column's width moves."""

import pytest
from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import RunDone, ServerState, TrialResult, TrialState
from tuiapp.session import Session
from tuiapp.tui import textual_private
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.details import TrialScreen
from tuiapp.tui.widgets.ledger_table import LedgerTable

NAMES = ["old-baseline", "new-baseline", "eagle3", "nccl-tree", "ep-a2a"]


def state(i: int, phase: str = "running") -> TrialState:
    return TrialState(t_s=1000.0 + i, name=NAMES[i], index=i, total=len(NAMES), phase=phase)


def result(i: int, status: str = "ok", **row) -> TrialResult:
    return TrialResult(t_s=1000.5 + i, name=NAMES[i], status=status, row=row)


def run(i: int, n: int, tok_s: float) -> RunDone:
    return RunDone(t_s=1001.0 + i + n / 100, run_index=n, requests=5, duration_s=4.0, decode_tok_s=tok_s,
                   output_tok_s=tok_s, trial=NAMES[i])


def lines(ledger: LedgerTable) -> list[str]:
    return [ledger.render_line(y).text for y in range(ledger.size.height)]


def on_cursor(ledger: LedgerTable, y: int) -> bool:
    """Whether line ``y`` has the cursor's background (the name column, never status-toned)."""
    cursor = ledger.get_component_rich_style("ledger--cursor").bgcolor
    return ledger.render_line(y)._segments[0].style.bgcolor == cursor


async def start(pilot, bus) -> LedgerTable:
    await publish(pilot, bus, ServerState(t_s=990.0, state="running"),
                  state(0), result(0, "ok", mean_decode_tok_s=82.0, sd_decode_tok_s=0.2, verdict="baseline"),
                  state(1), result(1, "keyerror"),
                  state(2), run(2, 0, 54.0))
    return pilot.app.dashboard.query_one(LedgerTable)


@pytest.mark.slow
async def test_cursor_follows_the_running_trial_and_enter_or_a_click_opens_one():
    session = Session(title="ledger", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(160, 48)) as pilot:
        bus = session.bus
        ledger = await start(pilot, bus)
        assert lines(ledger)[0].split() == ["#", "trial", "status", "tok/s", "sd", "vs", "base", "verdict"]
        assert ledger.row_count == 3 and ledger.highlighted == 2  # on the running trial
        assert on_cursor(ledger, 3) and not on_cursor(ledger, 1)
        assert " 54.0 " in lines(ledger)[3]  # its live mean
        await publish(pilot, bus, state(3))
        assert ledger.highlighted == 3  # follows the plan while it is not focused

        ledger.focus()
        await pilot.press("up", "up")
        assert ledger.highlighted == 1 and on_cursor(ledger, 2) and not on_cursor(ledger, 4)
        await publish(pilot, bus, state(4))
        assert ledger.highlighted == 1  # focused: the cursor stays where the user put it
        await pilot.press("enter")
        assert isinstance(app.screen, TrialScreen)
        assert "new-baseline" in str(app.screen.query_one("#detail-title").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, TrialScreen)

        await pilot.press("end")
        assert ledger.highlighted == 4
        await pilot.press("home")
        assert ledger.highlighted == 0
        await pilot.press("pagedown")
        assert ledger.highlighted == 4  # a page is more than the five rows

        # a click moves the cursor (line 1 + border 1: the header, then row 0), a second opens
        region = ledger.content_region
        x, y = region.x - ledger.region.x + 3, region.y - ledger.region.y + 1
        await pilot.click(LedgerTable, offset=(x, y))
        assert ledger.highlighted == 0 and not isinstance(app.screen, TrialScreen)
        await pilot.click(LedgerTable, offset=(x, y))
        await pilot.pause()
        assert isinstance(app.screen, TrialScreen)
        assert "old-baseline" in str(app.screen.query_one("#detail-title").render())


@pytest.mark.skipif(not textual_private.fast("render"), reason="tests the render fast path, "
                    "which TUIAPP_TEXTUAL_FAST turned off (test_tui_textual_private checks it is on by default)")
async def test_a_ledger_change_refreshes_only_its_lines_and_a_wider_column_lays_nothing_out(monkeypatch):
    from textual.screen import Screen

    session = Session(title="ledger", sources=[idle])
    app = DashboardApp(session)
    refreshed: list[tuple] = []
    layouts: list[int] = []
    refresh = LedgerTable.refresh
    layout = Screen._refresh_layout

    def spy(self, *regions, **kwargs):
        refreshed.append((regions, kwargs))
        return refresh(self, *regions, **kwargs)

    def counted(self, *args, **kwargs):
        layouts.append(1)
        return layout(self, *args, **kwargs)

    async with app.run_test(size=(100, 40)) as pilot:  # narrow and tall: the ledger's height is auto
        bus = session.bus
        ledger = await start(pilot, bus)
        monkeypatch.setattr(LedgerTable, "refresh", spy)
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        before = lines(ledger)

        await publish(pilot, bus, run(2, 1, 56.0))  # the running trial's live mean moves
        assert len(refreshed) == 1
        (region,) = refreshed[0][0]  # one line
        assert region.y == 3 and region.height == 1  # header, two finished rows, then the running one
        after = lines(ledger)
        assert after[3] != before[3] and " 55.0 " in after[3]
        assert after[:3] == before[:3]
        assert not layouts

        refreshed.clear()
        await publish(pilot, bus, result(2, "preflight_timeout"))  # a wider status column: every line moves
        assert " preflight_timeout " in lines(ledger)[3]
        assert refreshed and not layouts
        assert not any(kwargs.get("layout") for _, kwargs in refreshed)

        # what the screen shows from the partly refreshed lines is what a whole repaint shows
        shown = [[(s.text, s.style) for s in strip] for strip in app.screen._compositor.render_strips()]
        ledger.refresh()
        await pilot.pause()
        whole = [[(s.text, s.style) for s in strip] for strip in app.screen._compositor.render_strips()]
        assert shown == whole

        refreshed.clear()
        await publish(pilot, bus, state(3))  # a new row: the auto height grows by a line, a layout
        assert layouts
        assert ledger.size.height == 1 + 4 and "nccl-tree" in lines(ledger)[4]
