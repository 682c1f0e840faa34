"""The dashboard's load-curve view: the store keeps points and the load now; the grid places them."""

from tuiapp.events import PointDone, RunDone
from tuiapp.tui.curve_text import curve_grid
from tuiapp.tui.store import DashboardStore


def _p(trial, c, out, p50, p99):
    return PointDone(point_index=0, concurrency=c, runs=1, requests=c, duration_s=1.0, output_tok_s=out,
                     ttft_p50_ms=p50, ttft_p99_ms=p99, trial=trial, goodput_share=0.5)


def test_grid_places_p50_upper_p99_lower_per_trial():
    curves = {"base": [_p("base", 1, 100, 10, 20), _p("base", 16, 1000, 40, 100)],
              "new": [_p("new", 1, 110, 10, 15)]}
    rows, y_hi, x_hi, letters = curve_grid(curves, 40, 10)
    assert letters == {"base": "a", "new": "b"}
    assert y_hi == 105.0 and x_hi == 1050.0
    top = next(r for r in rows if r.strip())
    assert top.rstrip().endswith("a")  # base's p99 at the highest throughput is the highest mark
    assert "A" in rows[-1] or "A" in rows[-2]  # its p50 at low load sits low
    assert "b" in "".join(rows) and "B" in "".join(rows)
    assert "·" in "".join(rows)  # the points of a curve are joined
    assert all(len(r) == 40 for r in rows)


def test_store_tracks_points_and_the_load_now():
    s = DashboardStore()
    s.apply(RunDone(run_index=0, requests=4, duration_s=1, decode_tok_s=1, output_tok_s=1, request_rate=4.0))
    assert s.current_load == "4 req/s" and s.points == []
    s.apply(_p(None, 4, 10, 1, 2))
    assert len(s.points) == 1
    closed = DashboardStore()
    closed.apply(RunDone(run_index=0, requests=1, duration_s=1, decode_tok_s=1, output_tok_s=1))
    assert closed.current_load is None  # one closed-loop point: the usual latency panel
