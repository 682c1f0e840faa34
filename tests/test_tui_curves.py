"""The dashboard's load-curve view: the store keeps points and the load now; the grid places them."""

from tuiapp.events import Note, PointDone, RunDone, TrialState
from tuiapp.tui.curve_text import LoadAxis, load_grid
from tuiapp.tui.store import DashboardStore


def _p(trial, c, out, p50, p99):
    return PointDone(point_index=0, concurrency=c, runs=1, requests=c, duration_s=1.0, output_tok_s=out,
                     ttft_p50_ms=p50, ttft_p99_ms=p99, trial=trial, goodput_share=0.5)


def test_grid_places_each_trial_by_load_from_zero_p50_upper_p99_lower():
    curves = {"base": [_p("base", 1, 100, 10, 20), _p("base", 16, 1000, 40, 100)],
              "new": [_p("new", 2, 110, 10, 15)]}
    axis = LoadAxis([1, 16, 2], 40)
    assert axis.log and axis.x(1) == 0 and axis.x(16) == 39  # 16x apart: a log axis, ends at the edges
    rows, y_hi, letters = load_grid(curves, axis, 10, [lambda p: p.ttft_p50_ms, lambda p: p.ttft_p99_ms])
    assert letters == {"base": "a", "new": "b"} and y_hi == 105.0
    top = next(r for r in rows if r.strip())
    assert top.rstrip().endswith("a")  # base's p99 at the highest load is the highest mark
    assert "A" in rows[-1] or "A" in rows[-2]  # its p50 at low load sits low
    assert "B" in "".join(rows)  # new's p50 (its p99 shares the cell, p50 on top)
    assert "·" in "".join(rows) and all(len(r) == 40 for r in rows)
    assert axis.ticks([1, 16]).startswith("1") and axis.ticks([1, 16]).rstrip().endswith("16")
    rows, y_hi, _ = load_grid(curves, LoadAxis([1, 16], 40), 6, [lambda p: p.output_tok_s])
    assert y_hi == 1050.0 and "A" in rows[0] and "a" not in "".join(rows)  # one figure: upper case only


def test_store_tracks_points_and_the_load_now():
    s = DashboardStore()
    s.apply(RunDone(run_index=0, requests=4, duration_s=1, decode_tok_s=1, output_tok_s=1, request_rate=4.0))
    assert s.current_load == "4 req/s" and s.points == []
    s.apply(_p(None, 4, 10, 1, 2))
    assert len(s.points) == 1
    closed = DashboardStore()
    closed.apply(RunDone(run_index=0, requests=1, duration_s=1, decode_tok_s=1, output_tok_s=1))
    assert closed.current_load is None  # one closed-loop point: the usual latency panel


def _run(trial, point_index=0, **load):
    return RunDone(run_index=0, requests=4, duration_s=1, decode_tok_s=1, output_tok_s=1, trial=trial,
                   point_index=point_index, **load)


def test_a_closed_loop_campaign_keeps_its_layout_and_a_sweep_keeps_the_curves():
    s = DashboardStore()
    for i, name in enumerate(("base", "new")):  # trials of one load each (tuiapp demo): one PointDone each
        s.apply(TrialState(name=name, index=i, total=2, phase="running"))
        s.apply(_run(name, concurrency=1))
        s.apply(_p(name, 1, 10, 1, 2))
        s.apply(_run(name, concurrency=1))  # a run after the trial's point: still no curve
        assert s.mode == "campaign", name
    single = DashboardStore()
    single.apply(_run(None, request_rate=4.0))  # one open-loop rate: one point, no curve
    single.apply(PointDone(point_index=0, request_rate=4.0, runs=1, requests=4, duration_s=1.0))
    assert single.mode == "single"

    sweep = DashboardStore()
    sweep.apply(TrialState(name="base", index=0, total=2, phase="running"))
    sweep.apply(Note(text="load point 1 of 3: concurrency 1, 3 run(s)", source="bench"))
    assert sweep.mode == "curve"  # from the sweep's first point, before any figure
    sweep.apply(TrialState(name="new", index=1, total=2, phase="running"))  # a trial of one load next
    sweep.apply(_run("new", concurrency=1))
    assert sweep.mode == "curve"  # once in curve mode it never goes back
    search = DashboardStore()
    search.apply(Note(text="load point 1: 2 req/s, 2 run(s)", source="bench"))
    assert search.mode == "curve"  # --find-max-load: probes without a total
    no_notes = DashboardStore()  # a recording without the notes: the second point of a trial says it
    no_notes.apply(_p("base", 1, 10, 1, 2))
    assert no_notes.mode == "single"
    no_notes.apply(_run("base", point_index=1, concurrency=2))
    assert no_notes.mode == "curve"
