"""tuiapp/common/verdict.py, the one owner of verdicts, and the ledger that calls it: Welch with a
minimum effect, Holm over loads, failed requests, invalid trials, a sweep's headline."""

from __future__ import annotations

import pytest

from tuiapp.common import verdict as judge
from tuiapp.common.stats import Digest, percentile
from tuiapp.trials.ledger import Ledger, LedgerRow


def test_welch_needs_two_runs_a_side_and_the_minimum_effect():
    assert judge.welch_compare([100.0], [120.0, 121.0]).verdict == "n/a (needs 2 runs a side)"
    steady_a, steady_b = [100.0, 100.01, 99.99], [100.2, 100.21, 100.19]  # p tiny, 0.2%
    c = judge.welch_compare(steady_a, steady_b)
    assert c.p_value < 1e-4 and c.verdict == "within noise"
    assert judge.welch_compare(steady_a, steady_b, min_effect_pct=0.1).verdict == "faster"
    # a latency: lower is better, so a higher NEW is slower
    assert judge.welch_compare([10.0, 10.1, 9.9], [12.0, 12.1, 11.9], higher_better=False).verdict == "slower"
    # Holm's adjusted p decides when given
    assert judge.welch_compare(steady_a, steady_b, min_effect_pct=0.1, p_adjusted=0.2).verdict == "within noise"


def test_holm_matches_its_definition():
    # sorted p 0.01, 0.02, 0.04 over 3 tests: 0.03, 0.04, 0.04 (monotone), None stays None
    assert judge.holm([0.04, None, 0.01, 0.02]) == [pytest.approx(0.04), None, pytest.approx(0.03), pytest.approx(0.04)]
    assert judge.holm([0.5, 0.9]) == [pytest.approx(1.0), pytest.approx(1.0)]


def test_error_rate_is_worse_only_beyond_chance_and_a_point():
    assert judge.error_rate_verdict(0, 100, 90, 100)[0] == "worse"
    assert judge.error_rate_verdict(0, 100, 1, 100)[0] == "within noise"
    assert judge.error_rate_verdict(5, 100, 2, 100) == ("within noise", None)
    p = judge.error_rate_verdict(0, 16, 15, 16)[1]
    assert p is not None and p < 1e-6


def test_invalid_reasons():
    assert judge.invalid_reasons(requests=16, failed=16, output_tokens=0, runs=2) == ["all 16 requests failed"]
    assert judge.invalid_reasons(requests=16, failed=0, output_tokens=0, runs=2) == ["zero output tokens"]
    assert judge.invalid_reasons(requests=16, failed=2, output_tokens=100, runs=2, numerical_faults=2) == [
        "2 request(s) finished with NaN"]
    assert judge.invalid_reasons(requests=16, failed=0, output_tokens=100, runs=1, min_runs=2)[0].startswith("1 run(s)")
    assert judge.invalid_reasons(requests=16, failed=1, output_tokens=100, runs=2) == []


def _p(load, share=None, **kw):
    key = "request_rate" if isinstance(load, float) else "concurrency"
    return {key: load, "goodput_share": share, "requests": 32, **kw}


def test_a_probe_passes_on_served_rate_and_slo_share_with_failures_as_misses():
    assert judge.meets_goal(_p(8.0, 1.0, offered_request_rate=8.0, served_request_rate=7.9))[0]
    # 40 offered, 11.6 served, every request that got through met the goals: not met
    ok, why = judge.meets_goal(_p(40.0, 1.0, offered_request_rate=40.0, served_request_rate=11.6))
    assert not ok and "served 11.6 of 40 req/s offered" in why
    assert not judge.meets_goal(_p(64, 0.98))[0] and judge.meets_goal(_p(64, 0.99))[0]


def test_max_load_is_bracketed_or_at_least():
    answer = judge.max_load_answer([(1.0, True), (2.0, True), (4.0, False), (3.0, True)], "request_rate")
    assert answer["request_rate"] == 3.0 and answer["bracketed"] and answer["first_failing"] == 4.0
    assert "3 req/s (4 failed)" in answer["text"]
    open_ended = judge.max_load_answer([(1.0, True), (2.0, True), (4.0, True)], "request_rate")
    assert not open_ended["bracketed"] and "at least 4 req/s" in open_ended["text"]
    none = judge.max_load_answer([(4.0, False), (2.0, False)], "concurrency")
    assert none["concurrency"] is None and "none (even 2 streams failed)" in none["text"]


def test_headline_is_a_named_point_else_the_highest_that_met_the_slo_never_a_pool():
    points = [_p(1, 1.0), _p(16, 1.0), _p(64, 0.995), _p(256, 0.5)]
    assert judge.headline_point(points)["concurrency"] == 64
    assert judge.headline_point(points, "concurrency=16")["concurrency"] == 16
    assert judge.headline_point(points, "concurrency=32") is None
    no_slo = [_p(1), _p(16)]
    assert judge.headline_point(no_slo)["concurrency"] == 16
    assert judge.headline_point([_p(1, 0.2)]) is None  # an SLO no load met


def test_digest_is_exact_then_bounded_within_half_a_percent():
    d = Digest(exact_max=100)
    values = [float(i) for i in range(1, 101)]
    for v in values:
        d.add(v)
    assert d.percentile(50) == percentile(values, 50)
    for v in range(101, 100_001):
        d.add(float(v))
    assert len(d._buckets) < 3000 and d.count == 100_000  # noqa: SLF001 - the bound is the point
    assert d.percentile(50) == pytest.approx(50_000.5, rel=0.005)
    assert d.percentile(99) == pytest.approx(99_000.01, rel=0.005)


def _row(name, runs, **kw):
    return LedgerRow(name=name, status="ok", runs_decode_tok_s=runs, runs_output_tok_s=runs, **kw)


def test_a_trial_failing_15_of_16_requests_or_invalid_never_ranks_best():
    ledger = Ledger([_row("base", [80.0, 80.5, 79.5], is_baseline=True, requests=16, failed_requests=0),
                     # its one successful request per run was fast
                     _row("flaky", [120.0, 121.0, 119.0], requests=16, failed_requests=15),
                     _row("nan", [130.0, 131.0, 129.0], requests=16, invalid=["16 request(s) finished with NaN"]),
                     _row("good", [90.0, 90.5, 89.5], requests=16, failed_requests=0)])
    ledger.compare()
    ranked = ledger.rank()
    assert [r.name for r in ranked] == ["good", "base", "nan", "flaky"]
    assert ledger.rows["good"].vs_best == "best"
    assert ledger.rows["flaky"].vs_best == "more errors" and ledger.rows["flaky"].error_verdict == "worse"
    assert ledger.rows["nan"].vs_best == "invalid" and ledger.rows["nan"].verdict == "invalid"
    assert ledger.rows["flaky"].dead_end and ledger.rows["nan"].dead_end and not ledger.rows["good"].dead_end
    md = ledger.to_markdown()
    assert "15 of 16 requests failed (worse than its reference)" in md and "invalid: 16 request(s)" in md


def test_output_that_differs_from_the_reference_makes_a_trial_invalid():
    ledger = Ledger([_row("base", [80.0, 80.5, 79.5], is_baseline=True, output_digests={"0": "a", "1": "b"}),
                     _row("same", [90.0, 90.5, 89.5], output_digests={"0": "a", "1": "b"}),
                     _row("other", [95.0, 95.5, 94.5], output_digests={"0": "a", "1": "c"})])
    ledger.compare()
    assert ledger.rows["same"].verdict == "faster" and ledger.rows["same"].output_mismatch is None
    other = ledger.rows["other"]
    assert other.verdict == "invalid" and other.dead_end
    assert other.output_mismatch == "output differs from base's at temperature 0 on 1 of 2 prompts"
    assert [r.name for r in ledger.rank()][0] == "same"


def _pt(c, decode, share=1.0):
    runs = [decode * (1 + 0.01 * d) for d in (-1, 0, 1)]
    return {"concurrency": c, "goodput_share": share, "requests": 48, "decode_tok_s_runs": runs,
            "output_tok_s_runs": [r * c for r in runs]}


def test_a_sweep_trial_is_judged_at_its_headline_not_on_a_pool_of_loads():
    base = [_pt(1, 100.0), _pt(64, 60.0), _pt(256, 40.0)]
    # much faster at 1 and 64 streams, 27% slower at 256 (its headline: every load met the SLO)
    trial = [_pt(1, 130.0), _pt(64, 80.0), _pt(256, 29.2)]
    ledger = Ledger([LedgerRow(name="base", status="ok", is_baseline=True, points=base, headline="concurrency=256"),
                     LedgerRow(name="t", status="ok", points=trial, headline="concurrency=256",
                               runs_decode_tok_s=trial[-1]["decode_tok_s_runs"])])
    ledger.compare()
    row = ledger.rows["t"]
    assert row.verdict == "slower" and row.dead_end and row.delta_pct == pytest.approx(-27.0)
    assert [v["verdict"] for v in row.point_verdicts] == ["faster", "faster", "slower"]
