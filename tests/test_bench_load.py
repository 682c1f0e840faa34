"""Load curves: settings, workloads, point figures, the max-load search, and attach end to end."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tuiapp.bench.client import RequestResult
from tuiapp.bench.points import (
    PointTally,
    max_load,
    meets_slo,
    next_probe,
    percentile,
    point_event,
    point_summary,
)
from tuiapp.bench.settings import BenchSettings, parse_mean_spread, parse_slo, parse_sweep
from tuiapp.bench.workload import WorkloadError, build, load_file, synthetic
from tuiapp.events import PointDone, dump_event, load_event

SAMPLES = Path(__file__).resolve().parents[1] / "tuiapp" / "bench" / "samples"


# ---------------------------------------------------------------- settings


def test_shorthands_as_a_plan_table_writes_them():
    s = BenchSettings.model_validate({"sweep": "request-rate=1,2,4", "slo": "ttft_ms=2000,tpot_ms=100",
                                      "input_tokens": "512:64", "output_tokens": "128:16", "runs": 2})
    assert (s.sweep, s.sweep_values) == ("request_rate", (1.0, 2.0, 4.0))
    assert (s.slo_ttft_ms, s.slo_tpot_ms, s.slo_e2e_ms) == (2000.0, 100.0, None)
    assert (s.input_tokens, s.input_spread, s.max_new_tokens, s.output_spread) == (512, 64, 128, 16)
    assert [p.request_rate for p in s.points()] == [1.0, 2.0, 4.0]
    assert "sweep" in s.model_fields_set and "slo_ttft_ms" in s.model_fields_set  # plans inherit by fields set
    c = BenchSettings(sweep="concurrency", sweep_values=(1, 4))
    assert [(p.concurrency, p.request_rate) for p in c.points()] == [(1, None), (4, None)]


@pytest.mark.parametrize("fn, text, words", [
    (parse_sweep, "batch=1,2", "expected concurrency"),
    (parse_sweep, "concurrency=1,x", "numbers"),
    (parse_sweep, "concurrency=1.5", "whole"),
    (parse_sweep, "request-rate=0", "> 0"),
    (parse_slo, "ttft=5", "unknown goal"),
    (parse_slo, "ttft_ms", "expected"),
    (parse_slo, "tpot_ms=fast", "number"),
    (parse_mean_spread, "512:x", "MEAN[:SPREAD]"),
    (parse_mean_spread, "0", "mean >= 1"),
])
def test_bad_shorthands_say_why(fn, text, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        fn(text)


def test_spread_must_stay_below_the_mean_and_search_needs_goals():
    with pytest.raises(ValueError, match="spread must be below"):
        BenchSettings(input_tokens="64:64")
    with pytest.raises(ValueError, match="needs an SLO"):
        BenchSettings(find_max_load=True)


def test_open_loop_run_size_covers_seconds_of_arrivals():
    assert BenchSettings(request_rate=1).run_size == 16
    assert BenchSettings(request_rate=10).run_size == 80
    assert BenchSettings(request_rate=10, requests_per_run=5).run_size == 5
    assert BenchSettings(concurrency=8).run_size == 8


# ---------------------------------------------------------------- workloads


def test_sample_files_of_each_format_load():
    share = load_file(SAMPLES / "sharegpt.json")
    assert len(share) == 4  # the conversation that opens with the model is skipped
    assert share[0].text.startswith("What is continuous batching")
    assert share[1].max_new_tokens == round(len("Ctrl, Backspace and Caps Lock.") / 4)
    chat = load_file(SAMPLES / "openai_chat.jsonl")
    assert [p.max_new_tokens for p in chat] == [128, 32, 96, None]
    assert chat[2].messages[0]["content"].startswith("List four causes")  # batch-API line: its body
    assert chat[0].as_messages()[0]["role"] == "system"
    plain = load_file(SAMPLES / "prompts.jsonl")
    assert plain[3].input_ids == (1001, 2002, 3003, 4004, 5005, 6006, 7007, 8008)


def test_bad_sharegpt_is_one_line(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('[{"conversations": "no"}]')
    with pytest.raises(WorkloadError, match="entry 0"):
        load_file(f)
    f.write_text("{broken")
    with pytest.raises(WorkloadError, match="not valid JSON"):
        load_file(f)


def test_synthetic_spreads_and_shared_prefixes():
    ps = synthetic(100, 64, seed=3, input_spread=20, output_tokens=50, output_spread=10,
                   shared_prefix_tokens=30, prefix_groups=4)
    lengths = {len(p.input_ids) - 30 for p in ps}
    assert min(lengths) >= 80 and max(lengths) <= 120 and len(lengths) > 10
    outs = {p.max_new_tokens for p in ps}
    assert min(outs) >= 40 and max(outs) <= 60 and len(outs) > 5
    prefixes = {p.input_ids[:30] for p in ps}
    assert len(prefixes) == 4
    assert ps[0].input_ids[:30] == ps[4].input_ids[:30] != ps[1].input_ids[:30]


def test_prefix_groups_need_synthetic_prompts():
    with pytest.raises(ValueError, match="synthetic"):
        BenchSettings(shared_prefix_tokens=10)
    with pytest.raises(WorkloadError, match="synthetic"):  # settings built without validation
        build("reference", settings=BenchSettings.model_construct(shared_prefix_tokens=10, prefix_groups=1,
                                                                  input_spread=0))
    spread = build("reference", settings=BenchSettings(max_new_tokens=100, output_spread=50))
    assert all(50 <= p.max_new_tokens <= 150 for p in spread)


# ---------------------------------------------------------------- point figures


def test_percentile_interpolates_like_numpy():
    assert percentile([], 50) is None
    assert percentile([5.0], 99) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(101)), 90) == pytest.approx(90.0)


def _req(ttft_s, tokens, e2e_s, ok=True):
    return RequestResult(ok=ok, ttft_s=ttft_s, completion_tokens=tokens, e2e_s=e2e_s,
                         chunks=tokens, gap_sum_s=(e2e_s - ttft_s) if tokens > 1 else 0.0)


def test_goodput_counts_requests_meeting_every_goal():
    s = BenchSettings(slo_ttft_ms=100, slo_tpot_ms=10, request_rate=2)
    fast = _req(0.05, 11, 0.15)  # tpot 10 ms: met (<=)
    slow_first = _req(0.2, 11, 0.3)
    slow_decode = _req(0.05, 11, 0.5)
    failed = RequestResult(ok=False, error="HTTP 500")
    assert meets_slo(fast, s) and not meets_slo(slow_first, s) and not meets_slo(slow_decode, s)
    assert not meets_slo(failed, s)
    tally = PointTally(s)
    tally.add_run([fast, slow_first, slow_decode, failed], 2.0, 15.0, sends_s=[0.0, 0.5, 1.0, 1.5])
    ev = point_event(0, s, tally, "base")
    assert ev.goodput_share == pytest.approx(0.25) and ev.goodput_req_s == pytest.approx(0.5)
    assert ev.sent_request_rate == pytest.approx(2.0)  # 3 gaps in 1.5 s
    assert ev.requests == 4 and ev.errors == 1
    assert ev.output_tok_s == pytest.approx(33 / 2.0)
    assert ev.ttft_p50_ms == pytest.approx(50.0)  # of the three that succeeded: 50, 200, 50
    assert ev.ttft_p99_ms == pytest.approx(50 + (200 - 50) * 0.98)
    out = point_summary(ev)
    for name in ("request_rate", "sent_request_rate", "output_tok_s", "ttft_p50_ms", "ttft_p99_ms",
                 "tpot_p50_ms", "itl_p90_ms", "e2e_p99_ms", "goodput_req_s", "goodput_share",
                 "request_throughput_req_s", "decode_tok_s"):
        assert name in out
    assert "concurrency" not in out
    assert load_event(dump_event(ev)) == ev  # recordings and replay carry points


def test_closed_loop_point_names_its_concurrency_and_no_rate():
    tally = PointTally(BenchSettings(concurrency=4))
    tally.add_run([_req(0.01, 5, 0.05)], 0.05, 80.0)
    out = point_summary(point_event(1, BenchSettings(concurrency=4), tally, None))
    assert out["concurrency"] == 4 and "request_rate" not in out and out["goodput_req_s"] is None


# ---------------------------------------------------------------- --find-max-load


def _search(capacity, start, whole, max_points=8):
    history = []
    while (load := next_probe(history, start, whole=whole, max_points=max_points)) is not None:
        history.append((load, load <= capacity))
    return history


def test_search_doubles_then_bisects_to_within_ten_percent():
    history = _search(capacity=13.0, start=1.0, whole=False, max_points=20)
    assert [x for x, _ in history[:5]] == [1, 2, 4, 8, 16]
    found = max_load(history)
    assert 13.0 / 1.1 <= found <= 13.0


def test_search_is_bounded_and_handles_whole_numbers_and_no_answer():
    assert len(_search(capacity=1e9, start=1.0, whole=False, max_points=5)) == 5
    h = _search(capacity=37, start=4, whole=True, max_points=20)
    assert max_load(h) == 37 and all(x == int(x) for x, _ in h)
    assert max_load(_search(capacity=0.5, start=1, whole=True)) is None
    assert 0.3 / 1.1 <= max_load(_search(capacity=0.3, start=2.0, whole=False)) <= 0.3  # halves, then bisects


# ---------------------------------------------------------------- attach end to end


@pytest.fixture(scope="module")
def server_url():
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", "1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().split()[-1]
    finally:
        proc.terminate()
        proc.wait(5)


def attach(*args):
    return subprocess.run([sys.executable, "-m", "tuiapp", "attach", *args, "--headless", "--telemetry", "off"],
                          capture_output=True, text=True, timeout=60)


def test_sweep_with_slo_writes_points(server_url, tmp_path):
    f = tmp_path / "s.json"
    r = attach(server_url, "--sweep", "concurrency=1,4,16", "--runs", "2", "--slo", "ttft_ms=2000,tpot_ms=100",
               "--max-new-tokens", "8", "--summary", str(f))
    assert r.returncode == 0, r.stderr
    data = json.loads(f.read_text())
    assert [p["concurrency"] for p in data["points"]] == [1, 4, 16]
    assert [p["requests"] for p in data["points"]] == [2, 8, 32]
    assert all(p["goodput_share"] == 1.0 and p["runs"] == 2 for p in data["points"])
    assert data["slo"] == {"ttft_ms": 2000.0, "tpot_ms": 100.0}
    assert len(data["runs"]) == 6
    assert len(re.findall(r"^\S+ point +concurrency=", r.stdout, re.M)) == 3


def test_open_loop_reports_the_achieved_rate(server_url, tmp_path):
    f, rec = tmp_path / "s.json", tmp_path / "r.jsonl"
    r = attach(server_url, "--request-rate", "40", "--runs", "2", "--requests-per-run", "20", "--max-new-tokens", "4",
               "--input-tokens", "32:8", "--max-concurrency", "8", "--summary", str(f), "--record", str(rec))
    assert r.returncode == 0, r.stderr
    data = json.loads(f.read_text())
    (point,) = data["points"]
    assert point["request_rate"] == 40.0 and point["requests"] == 40 and point["max_concurrency"] == 8
    assert data["sent_request_rate"] == point["sent_request_rate"] > 0
    kinds = [json.loads(line).get("kind") for line in rec.read_text().splitlines()]
    assert kinds.count("point") == 1


@pytest.mark.parametrize("args, words", [
    (["--sweep", "batch=1,2"], "expected concurrency"),
    (["--slo", "ttft=5"], "unknown goal"),
    (["--find-max-load"], "needs --slo"),
    (["--request-rate", "4", "--sweep", "concurrency=1"], "exclusive"),
    (["--input-tokens", "64:80"], "spread must be below"),
    (["--output-tokens", "x"], "--output-tokens"),
    (["--request-rate", "0"], "request_rate"),
    (["--prompts", str(SAMPLES / "sharegpt.json"), "--shared-prefix-tokens", "8"], "synthetic"),
])
def test_bad_load_options_are_one_line_usage_errors(args, words):
    r = attach("http://127.0.0.1:1", "--runs", "1", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert r.stderr.strip().count("\n") == 0


def test_point_event_is_on_the_bus_union():
    ev = PointDone(point_index=0, concurrency=1, runs=1, requests=1, duration_s=1.0)
    assert load_event(dump_event(ev)).kind == "point"


def test_report_draws_the_curves(server_url, tmp_path):
    rec, out = tmp_path / "r.jsonl", tmp_path / "report.md"
    r = attach(server_url, "--sweep", "concurrency=1,4", "--runs", "1", "--max-new-tokens", "4", "--record", str(rec))
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "tuiapp", "report", str(rec), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    assert "## Load curves" in md and "| - | c=1 |" in md and "| - | c=4 |" in md
    svg = (out.parent / "report.curve_ttft.svg").read_text()
    assert svg.count("<polyline") == 2 and "run TTFT p99" in svg  # p50 and p99 of the one curve
