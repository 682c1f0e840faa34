"""Trials compared point by point: Welch per load (Holm over the loads) and where the curves cross."""

from tuiapp.common.verdict import compare_points, crossings
from tuiapp.trials.ledger import Ledger, LedgerRow


def _pt(c, runs, **kw):
    return {"concurrency": c, "output_tok_s_runs": runs, **kw}


BASE = [_pt(1, [100, 101, 99]), _pt(16, [1000, 1010, 990]), _pt(64, [2000, 2020, 1980])]
# faster at batch 1, slower above the graph limit: the order flips between 16 and 64
TRIAL = [_pt(1, [110, 111, 109]), _pt(16, [1001, 1009, 992]), _pt(64, [1700, 1710, 1690]), _pt(256, [1, 2])]


def test_per_point_verdicts_and_crossing():
    verdicts = compare_points(BASE, TRIAL)
    cross = crossings(verdicts)
    assert [(v["concurrency"], v["verdict"]) for v in verdicts] == [
        (1.0, "faster"), (16.0, "within noise"), (64.0, "slower")]  # 256: no reference point
    assert verdicts[0]["delta_pct"] == 10.0 and verdicts[0]["p_value"] < 0.05
    assert cross == ["curves cross between concurrency 1 (faster, +10.0%) and concurrency 64 (slower, -15.0%)"]


def test_no_crossing_when_one_side_wins_everywhere_and_rates_match_by_rate():
    base = [{"request_rate": 2.0, "output_tok_s_runs": [10, 11]}, {"request_rate": 4.0, "output_tok_s_runs": [20, 21]}]
    trial = [{"request_rate": 4.0, "output_tok_s_runs": [30, 31]}, {"request_rate": 2.0, "output_tok_s_runs": [15, 16]}]
    verdicts = compare_points(base, trial)
    cross = crossings(verdicts)
    assert [v["request_rate"] for v in verdicts] == [2.0, 4.0] and cross == []
    assert crossings([]) == []


def test_ledger_compares_curves_and_writes_them():
    ledger = Ledger([LedgerRow(name="base", status="ok", is_baseline=True, points=BASE),
                     LedgerRow(name="t", status="ok", points=TRIAL)])
    ledger.compare()
    row = ledger.rows["t"]
    assert len(row.point_verdicts) == 3 and row.crossings
    md = ledger.to_markdown()
    assert "Load curves:" in md and "curves cross between concurrency 1" in md



def test_saved_ledger_keeps_points_for_resume(tmp_path):
    ledger = Ledger([LedgerRow(name="base", status="ok", is_baseline=True, points=BASE),
                     LedgerRow(name="t", status="ok", points=TRIAL)])
    ledger.save(tmp_path / "l.json")
    again = Ledger.load(tmp_path / "l.json")
    again.compare()
    assert again.rows["base"].points == BASE and again.rows["t"].crossings
