"""The campaign view of trials --slurm: the rows from TrialJob events (in flight first), and the
screen behind key c, whose Enter opens the trial's details (issue 42)."""

from __future__ import annotations

import pytest
from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import TrialJob, TrialState
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.campaign_rows import campaign_rows, in_flight
from tuiapp.tui.screens.campaign import CampaignScreen
from tuiapp.tui.screens.details import TrialScreen


def job(trial: str, job_id: str, state: str, **kw) -> TrialJob:
    return TrialJob(t_s=1000.0, trial=trial, job_id=job_id, state=state, **kw)


JOBS = [
    job("baseline", "3", "COMPLETED", nodes=["n1"], queue_wait_s=0.0, decode_tok_s=89.54, runs=3),
    job("tp16", "4", "RUNNING", nodes=["n1", "n2"], queue_wait_s=2.0, decode_tok_s=88.0, runs=1, incidents=1,
        last_incident="assertion on n2 ranks 11"),
    job("oom", "5", "PENDING", reason="Resources"),
    job("chunked", "6", "CANCELLED", nodes=["n2"], reason="cancelled by tuiapp: oom on n2: [red]x[/red]",
        incidents=2, last_incident="oom on n2 ranks 3 [red]x[/red]"),
]


def test_rows_put_trials_in_flight_first():
    rows = campaign_rows({j.trial: j for j in JOBS})
    assert [r[0] for r in rows] == ["tp16", "oom", "baseline", "chunked"]
    assert rows[0] == ("tp16", "4", "RUNNING", "n1,n2", "2", "88.0", "1", "1: assertion on n2 ranks 11")
    assert rows[1][2] == "PENDING (Resources)" and rows[1][3] == "-" and rows[1][5] == "n/a"
    assert in_flight({j.trial: j for j in JOBS}) == 2


@pytest.mark.slow
async def test_key_c_opens_the_campaign_and_enter_a_trial():
    session = Session(title="campaign", sources=[idle])
    controls = session.controls = Controls()
    app = DashboardApp(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await publish(pilot, session.bus, *[TrialState(t_s=999.0, name=j.trial, index=i, total=4, phase="launching")
                                            for i, j in enumerate(JOBS)], *JOBS)
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CampaignScreen)
        table = screen.query_one("DataTable")
        assert table.row_count == 4
        assert [str(table.get_row_at(i)[0]) for i in range(4)] == ["tp16", "oom", "baseline", "chunked"]
        assert str(table.get_row_at(3)[7]) == "2: oom on n2 ranks 3 [red]x[/red]"  # shown, never markup
        assert "2 in flight, 4 submitted" in str(screen.query_one("#campaign-title").render())
        await publish(pilot, session.bus, job("oom", "5", "RUNNING", nodes=["n2"], queue_wait_s=7.0))
        screen.refresh_rows()
        await pilot.pause()
        assert str(table.get_row_at(1)[2]) == "RUNNING" and str(table.get_row_at(1)[3]) == "n2"
        await pilot.press("down", "down", "enter")  # baseline: finished, so its details
        await pilot.pause()
        assert isinstance(app.screen, TrialScreen)
        assert controls.focused == []  # a finished trial has no server to show
        await pilot.press("escape", "up", "up", "enter")  # tp16, running: the dashboard shows it alone
        await pilot.pause()
        assert controls.focused == ["tp16"] and not isinstance(app.screen, CampaignScreen)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("a")  # every trial again
        await pilot.pause()
        assert controls.focused == ["tp16", None]


class Controls:
    owns_server = False

    def __init__(self) -> None:
        self.focused: list[str | None] = []

    def focus_trial(self, name: str | None) -> bool:
        self.focused.append(name)
        return True


def test_a_focus_keeps_other_trials_server_events_off_the_bus(tmp_path):
    from pathlib import Path

    from tuiapp.events import LogLine, RunDone, TrialResult
    from tuiapp.slurm.runner import SlurmPlanRunner
    from tuiapp.trials.ledger import Ledger
    from tuiapp.trials.plan import parse_plan
    from tuiapp.trials.runner import RunnerOptions
    from tuiapp.trials.slurm_spec import SlurmSpec

    plan = parse_plan('[baseline]\nmodel = "m"\n[[trial]]\nname = "b"\nflags = {tp = 2}\n', Path("p.toml"))
    runner = SlurmPlanRunner(plan, plan.all(), Ledger(), RunnerOptions(ledger_path=tmp_path / "l.json"),
                             spec=SlurmSpec())

    class Bus:
        def __init__(self) -> None:
            self.events = []

        def publish(self, event) -> None:
            self.events.append(event)

    bus = Bus()
    runner._bus = bus
    to_a, to_b = runner._publisher("baseline", bus), runner._publisher("b", bus)
    line = LogLine(t_s=1.0, line_no=1, text="x")
    run = RunDone(t_s=1.0, run_index=0, requests=1, duration_s=1.0, decode_tok_s=1.0, output_tok_s=1.0)
    to_a(TrialState(t_s=1.0, name="baseline", index=0, total=2, phase="running"))
    to_b(TrialState(t_s=1.0, name="b", index=1, total=2, phase="running"))
    to_a(line), to_b(line)
    assert len(bus.events) == 4  # no focus: everything, as a headless campaign records it
    bus.events.clear()
    runner.set_focus("b")
    assert [(e.kind, getattr(e, "name", None)) for e in bus.events] == [("trial", "b")]  # the dashboard starts on b
    bus.events.clear()
    to_a(line), to_a(run), to_b(line), to_b(run)
    to_a(job("baseline", "1", "RUNNING")), to_a(TrialResult(t_s=1.0, name="baseline", status="ok"))
    assert [e.kind for e in bus.events] == ["log", "run", "trial_job", "trial_result"]
