"""`tuiapp compare --fail-on slower` as a gate that fails when it should: per load (Holm), on
failed requests, and with 3 when NEW cannot be judged (tuiapp/trials/compare.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tuiapp.trials.compare import compare, gate, load


def _tuiapp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", *args], capture_output=True, text=True, timeout=60)


def _point(c: int, tok_s: float, *, n: int = 4, requests: int = 32, errors: int = 0) -> dict:
    # steady runs: 1% spread around tok_s
    runs = [tok_s * (1 + 0.01 * ((i % 3) - 1)) for i in range(n)]
    return {"concurrency": c, "requests": requests, "errors": errors, "output_tok_s": tok_s,
            "output_tok_s_runs": runs, "decode_tok_s_runs": [r / c for r in runs]}


def _summary(path, points: list[dict]) -> str:
    pooled = [{"decode_tok_s": r, "output_tok_s": r} for p in points for r in p["decode_tok_s_runs"]]
    path.write_text(json.dumps({"runs": pooled, "points": points}))
    return str(path)


LOADS = (1, 4, 16, 64, 256)


def test_a_regression_at_one_load_of_five_fails_the_gate_though_the_pool_hides_it(tmp_path):
    base = _summary(tmp_path / "base.json", [_point(c, 100.0 * c) for c in LOADS])
    # 27% slower at 256 streams only; pooled over all runs the difference is noise
    new = _summary(tmp_path / "new.json", [_point(c, 100.0 * c * (0.73 if c == 256 else 1.0)) for c in LOADS])
    out = _tuiapp("compare", base, new, "--fail-on", "slower")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "decode_tok_s slower at concurrency=256 (-27.0%" in out.stdout
    data = json.loads(_tuiapp("compare", base, new, "--fail-on", "slower", "--json").stdout)
    assert data["gate"] == "slower" and data["exit_code"] == 1 and len(data["reasons"]) == 1
    rows = [r for r in data["rows"] if r["metric"] == "decode_tok_s"]
    assert [r["point"] for r in rows] == [f"concurrency={c}" for c in LOADS]
    assert all(r["p_adjusted"] is not None and r["p_adjusted"] >= r["p_value"] for r in rows)  # Holm
    same = _summary(tmp_path / "same.json", [_point(c, 100.0 * c) for c in LOADS])
    assert _tuiapp("compare", base, same, "--fail-on", "slower").returncode == 0


def test_more_failed_requests_is_worse_even_when_the_rest_is_as_fast(tmp_path):
    base = _summary(tmp_path / "base.json", [_point(4, 400.0, requests=100, errors=0)])
    new = _summary(tmp_path / "new.json", [_point(4, 400.0, requests=100, errors=90)])
    out = _tuiapp("compare", base, new, "--fail-on", "slower")
    assert out.returncode == 1, out.stdout
    assert "failed requests 90.0% vs 0.0% (worse" in out.stdout
    few = _summary(tmp_path / "few.json", [_point(4, 400.0, requests=100, errors=1)])
    assert _tuiapp("compare", base, few, "--fail-on", "slower").returncode == 0  # 1 in 100 is chance


def test_new_that_cannot_be_judged_exits_3_with_each_reason(tmp_path):
    base = _summary(tmp_path / "base.json", [_point(c, 100.0 * c) for c in LOADS])
    # the server died after one run at the second load: one run there, the rest missing
    died = [_point(1, 100.0), _point(4, 400.0, n=1)]
    new = _summary(tmp_path / "died.json", died)
    data = json.loads(_tuiapp("compare", base, new, "--fail-on", "slower", "--json").stdout)
    assert data["exit_code"] == 3 and data["gate"] == "invalid"
    reasons = "\n".join(data["reasons"])
    assert "NEW's session has 1 run(s) of decode_tok_s at concurrency 4; a verdict needs 2" in reasons
    for c in (16, 64, 256):
        assert f"NEW's session has no point at concurrency {c}" in reasons
    all_failed = _summary(tmp_path / "failed.json", [_point(c, 100.0 * c, errors=32) for c in LOADS])
    out = _tuiapp("compare", base, all_failed, "--fail-on", "slower")
    assert out.returncode == 3 and "all 160 requests failed" in out.stdout
    # without --fail-on it is a report: exit 0, the reasons still printed
    report = _tuiapp("compare", base, new)
    assert report.returncode == 0 and "no point at concurrency 256" in report.stdout


def _row(name: str, status: str = "ok", runs=(80.0, 80.5, 79.5), **kw) -> dict:
    return {"name": name, "status": status, "runs_decode_tok_s": list(runs), "runs_output_tok_s": list(runs),
            "requests": 30, "failed_requests": 0, **kw}


@pytest.mark.slow
def test_ledgers_a_failed_or_missing_trial_is_invalid_and_a_malformed_ledger_is_usage(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps([_row("a", is_baseline=True), _row("b")]))
    crashed = tmp_path / "crashed.json"
    crashed.write_text(json.dumps([_row("a", is_baseline=True), _row("b", "crash", runs=(), first_error="exit 1")]))
    out = _tuiapp("compare", str(base), str(crashed), "--fail-on", "slower")
    assert out.returncode == 3 and "NEW's b: crash: exit 1" in out.stdout
    dropped = tmp_path / "dropped.json"
    dropped.write_text(json.dumps([_row("a", is_baseline=True)]))
    out = _tuiapp("compare", str(base), str(dropped), "--fail-on", "slower")
    assert out.returncode == 3 and "NEW has no trial 'b'" in out.stdout
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps([_row("a", is_baseline=True), _row("b", invalid=["zero output tokens"])]))
    assert _tuiapp("compare", str(base), str(invalid), "--fail-on", "slower").returncode == 3
    for bad in ([{"name": "a", "status": "ok", "runs_decode_tok_s": ["x"]}], [{"name": "a"}], [1]):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        out = _tuiapp("compare", str(base), str(path), "--fail-on", "slower")
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr


def test_gate_in_process_pairs_single_sessions_whatever_their_load_is_called(tmp_path):
    a = _summary(tmp_path / "a.json", [_point(4, 400.0)])
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"runs": [{"decode_tok_s": 100.0 + i} for i in range(4)]}))  # no points at all
    ga, gb = load(tmp_path / "a.json"), load(b)
    rows = compare(ga, gb)
    result = gate(ga, gb, rows, "decode_tok_s")
    assert result.code == 0 and result.verdict == "within noise", (a, result)


@pytest.mark.parametrize("pct", [-1, float("nan")])
def test_min_effect_must_be_a_number_at_least_zero(tmp_path, pct):
    a = _summary(tmp_path / "a.json", [_point(4, 400.0)])
    out = _tuiapp("compare", a, a, "--min-effect-pct", str(pct))
    assert out.returncode == 2 and "--min-effect-pct" in out.stderr
