"""What the dashboard derives before drawing: a failed request's reason, the progress of a
sweep or a search from the loop's notes, latency percentiles per trial and load."""

from tuiapp.bench.points import load_text
from tuiapp.bench.settings import BenchSettings
from tuiapp.events import Note, PointDone, RequestDone, RunDone
from tuiapp.tui.figures import failure_reason, is_failed, point_note
from tuiapp.tui.store import DashboardStore


def _req(**kw) -> RequestDone:
    return RequestDone(**{"run_index": 0, "request_index": 0, **kw})


def test_a_failed_requests_reason_is_its_outcome_else_read_from_its_error():
    assert failure_reason(_req(ok=False, error="HTTP 503: busy", outcome="refused")) == "refused"
    # recordings from before outcomes: the error text says it
    assert failure_reason(_req(ok=False, error="HTTP 429: Too Many Requests")) == "refused"
    assert failure_reason(_req(ok=False, error="HTTP 500: boom")) == "http_error"
    assert failure_reason(_req(ok=False, error="timeout: ReadTimeout")) == "timeout"
    assert failure_reason(_req(ok=False, error="cannot connect: refused")) == "connect"
    # an HTTP exchange that went fine can still be a failed request (no output)
    assert is_failed(_req(ok=True, outcome="empty")) and not is_failed(_req(ok=True, outcome="ok"))
    assert not is_failed(_req(ok=False, outcome="cancelled"))


def test_the_loops_point_notes_are_read_for_a_sweep_and_a_search():
    rate = BenchSettings(request_rate=4.0, max_concurrency=8)
    # the loop's own words (tuiapp/bench/loop.py _run_point)
    assert point_note(f"load point 3 of 6: {load_text(rate)}, 3 run(s)") == (3, 6, load_text(rate), 3)
    assert point_note(f"load point 5: {load_text(BenchSettings(concurrency=16))}, 3 run(s)") == (
        5, None, "concurrency 16", 3)
    assert point_note("telemetry off") is None


def test_a_sweep_has_an_eta_a_search_has_none():
    s = DashboardStore()
    s.apply(Note(t_s=0, text="load point 1 of 4: concurrency 1, 2 run(s)", source="bench"))
    assert s.progress().eta_s is None  # no pace yet
    s.apply(RunDone(t_s=10, run_index=0, requests=1, duration_s=10, decode_tok_s=1, output_tok_s=1))
    progress = s.progress()
    assert progress.label == "point 1/4 (concurrency 1) run 2/2"
    assert progress.done_fraction == 1 / 8 and progress.eta_s == 70.0  # 7 runs left at 10 s each
    search = DashboardStore()
    search.apply(Note(t_s=0, text="load point 3: 8 req/s, 3 run(s)", source="bench"))
    search.apply(RunDone(t_s=5, run_index=0, requests=1, duration_s=5, decode_tok_s=1, output_tok_s=1))
    assert search.progress().label.startswith("probe 3") and search.progress().eta_s is None


def test_percentiles_are_of_the_current_load_only():
    s = DashboardStore()
    for i, ttft in enumerate((0.1, 0.2, 0.3)):
        s.apply(_req(ttft_s=ttft, tpot_s=0.01, e2e_s=1.0, request_index=i))
    assert s.latency.percentiles_ms()["TTFT"] == [200.0, 280.0, 298.0]
    s.apply(PointDone(point_index=0, concurrency=1, runs=1, requests=3, duration_s=3.0))
    assert len(s.latency) == 0  # the next load starts empty


def test_a_gauge_series_is_one_point_per_10_s_and_moves_only_when_its_chart_would():
    from tuiapp.tui.store import GAUGE_BUCKET_S, GaugeSeries

    g = GaugeSeries()
    g.add(0.0, 10.0)
    v = g.version
    g.add(1.0, 10.0)  # the same mean: the chart is the same, so is the version
    assert list(g) == [10.0] and g.version == v
    g.add(2.0, 40.0)
    assert list(g) == [20.0] and g.version != v  # the mean of the column's readings
    g.add(GAUGE_BUCKET_S + 0.5, None)  # a new column with no reading yet: a gap
    assert list(g) == [20.0, None]
    g.gap()
    g.add(2 * GAUGE_BUCKET_S, 5.0)
    assert list(g) == [20.0, None, None, 5.0]
    assert GaugeSeries().version[0] != g.version[0]  # a new series (a replay seek) never matches an old chart
