"""End to end: a failure in the simulator reaches the alerts panel and opens its traceback.

The simulator runs as a real child process (stdout and stderr merged, as the launcher does);
the log watcher turns its output into events on the session bus, the dashboard shows them.
"""

import asyncio
import os
import sys

import pytest

from tuiapp.session import Session
from tuiapp.sim.process import free_port
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.details import AlertScreen
from tuiapp.tui.widgets.alert_list import AlertList, ranks_label

EP_A2A = ["--moe-runner-backend", "flashinfer_cutlass", "--moe-a2a-backend", "flashinfer"]


def sim_source(args: list[str]):
    async def source(bus) -> None:
        from tuiapp.logwatch.watcher import LogWatcher

        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tuiapp.sim.server", "--port", str(free_port()), "--sim-speed", "50",
            "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=dict(os.environ))
        try:
            await LogWatcher(bus.publish).pump(proc.stdout)
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        await asyncio.Event().wait()  # keep the session open, as a live one would

    return source


@pytest.mark.slow
async def test_simulated_expert_parallel_failure_reaches_the_alerts_panel():
    session = Session(title="sim", sources=[sim_source(EP_A2A)])
    app = DashboardApp(session)
    async with app.run_test(size=(120, 36)) as pilot:
        alerts = app.dashboard.query_one(AlertList)
        for _ in range(600):  # up to 30 s on a loaded machine; usually a few
            newest = app.store.alerts_newest_first
            kinds = [a.alert_kind for a in newest]
            failures = [a for a in newest if a.alert_kind != "crash"]
            # ranks keep joining their incident for a moment after it is first shown
            if kinds[:3] == ["crash", "oom", "assertion"] and sum(len(a.ranks) for a in failures[:2]) == 8:
                break
            await pilot.pause(0.05)
        # the server's death is an alert of its own, after the failure that caused it
        assert kinds[:3] == ["crash", "oom", "assertion"], kinds
        await pilot.pause(0.3)  # one paint tick
        shown = alerts.shown_prompts()
        assert "crash" in shown[0] and "oom" in shown[1] and "assertion" in shown[2]
        crash, oom, assertion = app.store.alerts_newest_first[:3]
        assert crash.caused_by == oom.alert_id
        assert sorted(oom.ranks + assertion.ranks) == list(range(8))  # per-rank tracebacks grouped
        assert f"rank {ranks_label(oom.ranks)}" in shown[1]

        await pilot.press("down", "enter")  # the newest failure: the OOM
        assert isinstance(app.screen, AlertScreen)
        body = str(app.screen.query_one("#detail-body").render())
        assert "OutOfMemoryError" in body and "Traceback" in body
