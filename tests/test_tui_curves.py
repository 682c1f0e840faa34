"""The dashboard's load-curve view: the store keeps points and the load now; the grid places them."""

from tuiapp.events import PointDone, RunDone
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
