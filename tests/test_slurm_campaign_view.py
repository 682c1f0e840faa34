"""The campaign view of trials --slurm: the rows from TrialJob events (in flight first), and the
screen behind key c, whose Enter opens the trial's details (issue 42)."""

from __future__ import annotations

from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import TrialJob, TrialState
from tuiapp.session import Session
from tuiapp.slurm.campaign_view import campaign_rows, in_flight
from tuiapp.tui.app import DashboardApp
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


async def test_key_c_opens_the_campaign_and_enter_a_trial():
    session = Session(title="campaign", sources=[idle])
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
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TrialScreen)
