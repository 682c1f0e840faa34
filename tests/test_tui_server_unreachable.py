"""The header says UNREACHABLE, with why, while an attached server is lost, and RUNNING again
when it is back (the states of tuiapp/server/states.py)."""

from __future__ import annotations

from tuiapp.commands.preview import file_source
from tuiapp.events import Alert, ServerState
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.header_bar import HeaderBar

URL = "http://127.0.0.1:30000"


async def header_after(events: list) -> str:
    app = DashboardApp(Session(title="attach", sources=[file_source(events)]))
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(500):
            if app.store.applied >= len(events) and not len(app.events):
                break
            await pilot.pause(0.01)
        app.dashboard.paint()
        await pilot.pause()
        header = app.dashboard.query_one(HeaderBar)
        return header.render_line(0).text


async def test_header_shows_unreachable_and_then_running():
    lost = [ServerState(state="running", url=URL, message="attached"),
            ServerState(state="unreachable", url=URL, message="cannot connect: Connection refused"),
            Alert(alert_kind="crash", message=f"server unreachable: {URL} refuses connections", source="bench")]
    line = await header_after(lost)
    assert "UNREACHABLE" in line and "Connection refused" in line
    line = await header_after([*lost, ServerState(state="running", url=URL, message="back after 3.1 s")])
    assert "RUNNING" in line and "UNREACHABLE" not in line
