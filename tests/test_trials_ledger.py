"""The ledger: Welch verdicts, dead ends, attribution, JSON/Markdown/CSV, reload for --resume."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest

from tuiapp.trials.ledger import Ledger, LedgerRow, fill_run_stats


def _runs(mean: float, sd: float, n: int, rng: random.Random) -> list[float]:
    return [rng.gauss(mean, sd) for _ in range(n)]


def _row(name: str, runs: list[float], *, status: str = "ok", **kw) -> LedgerRow:
    row = LedgerRow(name=name, status=status, runs_decode_tok_s=runs, **kw)
    fill_run_stats(row)
    return row


def _verdict(base: list[float], trial: list[float]) -> str | None:
    ledger = Ledger()
    ledger.add(_row("base", base, is_baseline=True))
    ledger.add(_row("t", trial))
    return ledger.rows["t"].verdict


def test_identical_configurations_are_within_noise():
    # 5 runs each with the campaign's run-to-run sd (~0.3 tok/s). Over many draws the test
    # must call a difference that is not there only about alpha = 5% of the time.
    rng = random.Random(7)
    verdicts = [_verdict(_runs(89.5, 0.3, 5, rng), _runs(89.5, 0.3, 5, rng)) for _ in range(300)]
    false_alarms = sum(v != "within noise" for v in verdicts) / len(verdicts)
    assert false_alarms < 0.10
    # The campaign's own good runs against themselves, shuffled.
    good = [89.8, 89.8, 89.3, 89.3, 89.3]
    assert _verdict(good, good[::-1]) == "within noise"


def test_82_to_89_5_is_faster_and_back_is_slower():
    rng = random.Random(11)
    for _ in range(100):
        old, new = _runs(82.0, 0.3, 5, rng), _runs(89.5, 0.3, 5, rng)
        assert _verdict(old, new) == "faster"
        assert _verdict(new, old) == "slower"


def test_a_small_shift_inside_the_noise_is_within_noise():
    # 0.1 tok/s with sd 0.3 and 5 runs is not distinguishable.
    assert _verdict([89.8, 89.8, 89.3, 89.3, 89.3], [89.9, 89.4, 89.4, 89.9, 89.4]) == "within noise"


def test_failed_and_slower_trials_are_dead_ends_and_rows_reload():
    ledger = Ledger()
    ledger.add(_row("old", [82.1, 81.8, 82.0, 82.3, 81.9], is_baseline=True))
    ledger.add(_row("fail", [], status="keyerror", first_error="KeyError: 12", error_ranks=list(range(8))))
    ledger.add(_row("slow", [38.0, 38.2, 37.9, 38.1, 38.0]))
    ledger.add(_row("fast", [89.8, 89.8, 89.3, 89.3, 89.3]))
    rows = ledger.rows
    assert rows["old"].verdict == "baseline" and not rows["old"].dead_end
    assert rows["fail"].dead_end and rows["fail"].verdict is None
    assert rows["slow"].dead_end and rows["slow"].verdict == "slower"
    assert not rows["fast"].dead_end and rows["fast"].verdict == "faster"
    assert abs(rows["fast"].delta_pct - 100 * (89.5 - 82.02) / 82.02) < 0.01
    lo, hi = rows["fast"].ci95_decode_tok_s
    assert lo < rows["fast"].mean_decode_tok_s < hi

    data = json.loads(ledger.to_json())
    for obj in data:
        assert {"name", "status", "mean_decode_tok_s", "sd_decode_tok_s", "verdict", "diff"} <= set(obj)
    reloaded = Ledger([LedgerRow.model_validate(o) for o in data])
    assert reloaded.rows == ledger.rows

    md = ledger.to_markdown()
    assert "| fail | keyerror |" in md and "KeyError: 12 (ranks 0,1,2,3,4,5,6,7)" in md
    table = list(csv.DictReader(io.StringIO(ledger.to_csv())))
    assert [r["name"] for r in table] == ["old", "fail", "slow", "fast"]
    assert table[3]["verdict"] == "faster" and table[1]["dead_end"] == "True"


def test_attribution_gives_each_knob_its_share():
    ledger = Ledger()
    ledger.add(_row("old", [82.0, 82.2, 81.9, 82.1, 81.8], is_baseline=True))
    ledger.add(_row("new/a", [86.0, 86.2, 85.9, 86.1, 85.8], isolates="new", knob="a"))
    ledger.add(_row("new/b", [82.1, 82.0, 81.9, 82.2, 81.8], isolates="new", knob="b"))
    ledger.add(_row("new", [89.5, 89.7, 89.4, 89.6, 89.3], isolates="new"))
    a, b = ledger.rows["new/a"], ledger.rows["new/b"]
    assert a.verdict == "faster" and b.verdict == "within noise"
    assert abs(a.share_pct - 100 * 4.0 / 7.5) < 0.5
    (line,) = ledger.attribution()
    assert line.startswith("new +7.50 tok/s")
    assert "a +4.00 tok/s (faster" in line and "b +0.00 tok/s (within noise" in line
    assert "interaction +3.50 tok/s" in line


def test_a_significant_but_tiny_difference_is_within_noise():
    # Very steady runs make 0.1% "significant" for Welch; the ledger calls it noise.
    base = [89.50, 89.51, 89.50, 89.49, 89.50]
    shifted = [x + 0.09 for x in base]
    ledger = Ledger()
    ledger.add(_row("base", base, is_baseline=True))
    ledger.add(_row("t", shifted))
    assert ledger.rows["t"].p_value < 0.001
    assert ledger.rows["t"].verdict == "within noise"
    strict = Ledger(min_effect_pct=0.0)
    strict.add(_row("base", base, is_baseline=True))
    strict.add(_row("t", shifted))
    assert strict.rows["t"].verdict == "faster"


def test_a_ledger_that_cannot_be_read_is_a_value_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="cannot read: Is a directory") as caught:
        Ledger.load(tmp_path)
    assert str(caught.value).startswith(str(tmp_path))
