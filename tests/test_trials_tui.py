"""A plan in the dashboard: the ledger panel fills in as trials finish, and the TUI stays
up (with the exit code) after the last one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuiapp.trials.campaign import build_trials_session
from tuiapp.trials.ledger import Ledger
from tuiapp.trials.plan import load_plan
from tuiapp.trials.runner import RunnerOptions
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.ledger_table import LedgerTable

PLAN = Path(__file__).parent / "data" / "trials" / "tiny.toml"


@pytest.mark.slow
async def test_ledger_panel_fills_in_live(tmp_path):
    plan = load_plan(PLAN)
    ledger = Ledger()
    options = RunnerOptions(ledger_path=tmp_path / "l.json", sim_speed=100.0, telemetry="sim")
    session, _runner = build_trials_session(plan, plan.all(), ledger, options)
    app = DashboardApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(600):
            await pilot.pause(0.05)
            if app._sources is not None and app._sources.is_finished:
                break
        assert app._sources.is_finished, "plan did not finish"
        for _ in range(100):  # the store applies events on its own tick
            await pilot.pause(0.02)
            if all(r.result is not None for r in app.store.trials.values()) and len(app.store.trials) == 4:
                break
        rows = app.store.trials
        assert {name: row.result.status for name, row in rows.items()} == {
            "only": "ok", "broken": "keyerror", "typo": "preflight", "slow-start": "timeout"}
        assert rows["only"].result.row["verdict"] == "baseline"
        app.dashboard.paint()
        await pilot.pause()
        table = app.dashboard.query_one(LedgerTable)
        assert table.row_count == 4
        assert session.exit_code == 0
        assert app.is_running  # still up, so the ledger can be read
    assert [r.name for r in ledger.rows.values()] == ["only", "broken", "typo", "slow-start"]
