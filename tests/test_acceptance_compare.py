"""Trials compared on acceptance per draft position (tuiapp.common.acceptance_compare, the ledger)."""

import pytest

from tuiapp.common.acceptance_compare import (
    compare_positions,
    pooled_by_position,
    runs_by_position,
    summary_text,
)
from tuiapp.trials.ledger import Ledger, LedgerRow


def test_runs_give_one_figure_per_position_and_pool_by_steps():
    runs = [([10, 20, 30, 40], None), ([0, 0, 50, 50], None), (None, None)]
    per = runs_by_position(runs)
    assert per == [pytest.approx([0.9, 1.0]), pytest.approx([0.7, 1.0]), pytest.approx([0.4, 0.5])]
    assert pooled_by_position(runs) == pytest.approx([190 / 200, 170 / 200, 90 / 200])
    # with caps the unobserved steps leave the denominator
    assert pooled_by_position([([10, 20, 30, 40], [0, 0, 50, 50])])[2] == pytest.approx(0.8)


def test_per_position_welch_names_the_position_that_moved():
    base = [[0.80, 0.81, 0.79, 0.80], [0.60, 0.61, 0.59, 0.60]]
    new = [[0.90, 0.91, 0.89, 0.90], [0.60, 0.59, 0.61, 0.60]]
    got = compare_positions(base, new)
    assert [v["verdict"] for v in got] == ["higher", "within noise"]
    assert got[0]["delta_pts"] == pytest.approx(10.0)
    assert got[0]["p_adjusted"] >= got[0]["p_value"]  # Holm over the positions
    assert summary_text(got).startswith("p1 +10.0 pts higher; p2")
    one_run = compare_positions([[0.8]], [[0.9]])
    assert one_run[0]["verdict"].startswith("n/a")  # one run cannot show noise


def test_the_ledger_compares_trials_per_position(tmp_path):
    base = LedgerRow(name="eagle3", status="ok", is_baseline=True, runs_decode_tok_s=[50, 51, 52],
                     runs_accept_by_position=[[0.8, 0.8, 0.81], [0.6, 0.62, 0.61]])
    steps4 = LedgerRow(name="steps4", status="ok", runs_decode_tok_s=[50, 51, 52],
                       runs_accept_by_position=[[0.7, 0.71, 0.7], [0.6, 0.61, 0.62], [0.4, 0.41, 0.4]])
    plain = LedgerRow(name="plain", status="ok", runs_decode_tok_s=[50, 51, 52])
    ledger = Ledger([base, steps4, plain])
    ledger.compare()
    assert [v["verdict"] for v in steps4.accept_position_verdicts] == ["lower", "within noise"]
    assert plain.accept_position_verdicts == []  # no speculation: nothing to compare
    ledger.save(tmp_path / "ledger.json")  # a --resume reads the per-run figures back
    again = Ledger.load(tmp_path / "ledger.json")
    assert again.rows["steps4"].runs_accept_by_position == steps4.runs_accept_by_position
