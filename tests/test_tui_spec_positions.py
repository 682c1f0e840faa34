"""The per-position acceptance panel: bars per draft position and the accept-length distribution,
pooled over the trial's requests; folded without speculation (the header says "spec off")."""

from session_helpers import idle, publish  # tests/ is on the path

from tuiapp.events import RequestDone, ServerInfo, TrialState
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.spec_positions import NO_HISTOGRAM, SpecPositionsPanel

URL = "http://127.0.0.1:30000"


def _req(i, hist, caps=None, **kw):
    return RequestDone(run_index=0, request_index=i, completion_tokens=sum(hist), spec_verify_ct=sum(hist),
                       spec_accept_histogram=hist, spec_cap_histogram=caps, **kw)


def test_store_pools_a_trials_histograms_and_a_new_trial_starts_empty():
    store = DashboardStore()
    store.apply(TrialState(name="a", index=0, total=2, phase="running"))
    store.apply(_req(0, [10, 20, 30, 40]))
    store.apply(_req(1, [10, 0, 0, 0]))
    assert store.spec_tally.accepted == [20, 20, 30, 40] and store.spec_tally.requests == 2
    assert [round(p.rate, 3) for p in store.spec_tally.positions()] == [round(90 / 110, 3), round(70 / 110, 3),
                                                                        round(40 / 110, 3)]
    store.apply(TrialState(name="b", index=1, total=2, phase="running"))
    assert store.spec_tally.requests == 0  # b's acceptance is never read as a's


async def test_panel_shows_bars_per_position_and_folds_without_speculation():
    session = Session(title="spec", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(200, 60)) as pilot:
        panel = app.dashboard.query_one(SpecPositionsPanel)
        await publish(pilot, session.bus, ServerInfo(url=URL, version="0.5.23"))
        assert not panel.display  # spec off: folded with the acceptance panel
        await publish(pilot, session.bus, ServerInfo(url=URL, version="0.5.23", speculative_algorithm="EAGLE3"),
                      _req(0, [10, 18, 54, 18], [0, 0, 50, 50]))
        assert panel.display
        lines = [line.plain for line in panel.lines(60, 8)]
        # conditional 0.9, 0.8, 0.5; half the steps' budget stopped short of position 3, so it
        # is 18 accepted of the 50 that saw it (36%), not of all 100
        assert lines[0].startswith("p1 ") and lines[0].endswith(" 90% |90%")
        assert lines[1].endswith(" 72% |80%")
        assert lines[2].endswith(" 36% |50% 50% seen")
        assert lines[3] == "len 1-4 10/18/54/18%" and lines[4].startswith("mean 2.80 tok/step  100 steps")
        short = [line.plain for line in panel.lines(20, 3)]  # the size the perf row gives it at 160x48
        assert short[:2] == ["p1-3 90/72/36%", "len 1-4 10/18/54/18%"] and short[2].startswith("mean 2.80")


async def test_a_speculating_server_without_histograms_says_so():
    session = Session(title="spec", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(200, 60)) as pilot:
        panel = app.dashboard.query_one(SpecPositionsPanel)
        await publish(pilot, session.bus, ServerInfo(url=URL, version="0.5.3", speculative_algorithm="EAGLE"),
                      RequestDone(run_index=0, request_index=0, completion_tokens=9, spec_verify_ct=3, accept_length=3.0))
        assert panel.display
        assert panel.lines(200, 6)[0].plain == NO_HISTOGRAM
