"""The alert list: newest first, a cursor that keeps its alert, Enter opens it, a title that
says which rows show, and a new alert lays the screen out only while the list still grows."""

import pytest
from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import Alert, ServerState
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.details import AlertScreen
from tuiapp.tui.widgets.alert_list import AlertList


def alert(i: int) -> Alert:
    return Alert(t_s=1000.0 + i, alert_kind="assertion", message=f"AssertionError: number {i}", ranks=[i % 8],
                 traceback=f"Traceback (most recent call last):\nAssertionError: number {i}", alert_id=i)


@pytest.mark.slow
async def test_cursor_keeps_its_alert_enter_opens_it_and_the_title_counts_rows(monkeypatch):
    session = Session(title="alerts", sources=[idle])
    app = DashboardApp(session)
    passes = []
    async with app.run_test(size=(100, 30)) as pilot:
        from textual.screen import Screen

        layout = Screen._refresh_layout

        def counted(self, *args, **kwargs):
            passes.append(1)
            return layout(self, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        bus = session.bus
        alerts = app.dashboard.query_one(AlertList)
        await publish(pilot, bus, ServerState(t_s=990.0, state="running"))
        assert alerts.shown_prompts() == [] and "no alerts" in alerts.render_line(0).text

        await publish(pilot, bus, alert(0))
        await publish(pilot, bus, alert(1))
        shown = alerts.shown_prompts()
        assert "number 1" in shown[0] and "number 0" in shown[1]  # newest first
        assert alerts.highlighted == 0  # on the head: it follows new alerts

        alerts.focus()
        await pilot.press("down")
        assert alerts.highlighted == 1
        await publish(pilot, bus, alert(2))
        assert "number 0" in alerts.shown_prompts()[alerts.highlighted]  # still on its alert
        await pilot.press("enter")
        assert isinstance(app.screen, AlertScreen)
        assert "number 0" in str(app.screen.query_one("#detail-body").render())
        await pilot.press("escape")

        await publish(pilot, bus, *(alert(i) for i in range(3, 15)))  # past the height cap
        height = alerts.size.height
        n = alerts.alert_count
        assert n == 15 > height
        assert alerts.border_title.endswith(f"of {n}")
        before = len(passes)
        await publish(pilot, bus, alert(100))  # the list is full: its height cannot move
        assert len(passes) == before
        assert alerts.border_title.endswith(f"of {n + 1}")
        assert [alerts.render_line(y).text.split()[0] for y in range(height)] == ["ERR"] * height

        await pilot.press("end")
        assert alerts.highlighted == n and "number 0" in alerts.shown_prompts()[n]
        rows = alerts.border_title.rsplit("  ", 1)[1]
        assert rows == f"{n + 2 - height}–{n + 1} of {n + 1}"  # scrolled to the oldest
        assert "number 0" in alerts.render_line(height - 1).text
        await pilot.press("home")
        assert alerts.highlighted == 0 and "number 100" in alerts.render_line(0).text


async def test_growing_list_lays_out_once_per_new_alert():
    session = Session(title="alerts", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        alerts = app.dashboard.query_one(AlertList)
        await publish(pilot, session.bus, ServerState(t_s=990.0, state="running"), alert(0))
        h1 = alerts.size.height
        await publish(pilot, session.bus, alert(1))
        assert alerts.size.height == h1 + 1  # grew by its line
