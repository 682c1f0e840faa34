"""Acceptance per draft position: the histogram math, the client's reading, the simulator end to end."""

import asyncio

import pytest

from tuiapp.bench.client import RequestResult, _apply_meta, _apply_spec_details
from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.run_events import run_event
from tuiapp.bench.settings import BenchSettings
from tuiapp.common import acceptance
from tuiapp.events import RequestDone, RunDone, ServerStats
from tuiapp.server.metrics_poll import (
    CounterWindow,
    parse_counters,
    parse_metrics,
    run_metrics_poller,
)

sim_process = pytest.importorskip("tuiapp.sim.process")


def test_rates_from_a_histogram_without_caps():
    # 100 steps: 10 accepted none, 20 one, 30 two, 40 all three
    rates = acceptance.per_position([10, 20, 30, 40])
    assert [r.position for r in rates] == [1, 2, 3]
    assert [r.rate for r in rates] == pytest.approx([0.9, 0.7, 0.4])
    assert [r.conditional for r in rates] == pytest.approx([0.9, 0.7 / 0.9, 0.4 / 0.7])
    assert all(r.observed_steps == 100 for r in rates)
    assert acceptance.mean_length([10, 20, 30, 40]) == pytest.approx(1 + (20 + 60 + 120) / 100)
    assert acceptance.length_shares([10, 20, 30, 40]) == pytest.approx([0.1, 0.2, 0.3, 0.4])


def test_positions_beyond_a_steps_budget_are_unobserved_not_rejected():
    # half the steps had a budget of 2 drafts: position 3 was seen by 50 steps only, and all
    # 40 that accepted it came from those; counting it over 100 steps would halve its rate
    accepted, caps = [10, 20, 30, 40], [0, 0, 50, 50]
    third = acceptance.per_position(accepted, caps)[2]
    assert (third.accepted_steps, third.observed_steps, third.rate) == (40, 50, pytest.approx(0.8))
    # a cap histogram that counts other steps is no reading: plain rates
    assert acceptance.per_position(accepted, [0, 0, 50])[2].rate == pytest.approx(0.4)


def test_pooling_sums_counts_so_a_busy_rank_weighs_more():
    busy, quiet = [0, 0, 0, 90], [10, 0, 0, 0]  # rank 0: 90 steps all accepted; rank 1: 10 none
    pooled = acceptance.pool([busy, quiet, None])
    assert pooled == [10, 0, 0, 90]
    assert acceptance.per_position(pooled)[0].rate == pytest.approx(0.9)  # not (1.0 + 0.0) / 2
    assert acceptance.add([1, 2], [3, 4, 5]) == [4, 6, 5]


@pytest.mark.parametrize("bad", [None, [], [0, 0], [1, -2], [1, "x"], [1, float("nan")], "12", [True, 1]])
def test_hostile_histograms_are_no_reading(bad):
    assert acceptance.counts(bad) is None
    assert acceptance.per_position(None) == [] and acceptance.mean_length(None) is None


def test_window_accept_length_from_counter_deltas():
    assert acceptance.window_length(300, 100) == 3.0
    assert acceptance.window_length(0, 0) is None  # idle
    assert acceptance.window_length(-5, 10) is None  # counters reset (restart)


def test_client_reads_both_histogram_names():
    for key in acceptance.HISTOGRAM_KEYS:
        res = RequestResult()
        _apply_meta({"completion_tokens": 9, "finish_reason": {"type": "length"}, "spec_verify_ct": 3,
                     key: [0, 1, 2], "spec_cap_lens_histogram": [0, 1, 2]}, res, 9)
        assert res.spec_accept_histogram == [0, 1, 2] and res.spec_cap_histogram == [0, 1, 2]
    res = RequestResult()
    _apply_spec_details({"spec_verify_ct": 2, "spec_correct_drafts_histogram": [1, 1], "spec_cap_lens_histogram": []}, res)
    assert res.spec_accept_histogram == [1, 1] and res.spec_cap_histogram is None


def test_a_run_pools_its_requests_histograms():
    a = RequestResult(ok=True, completion_tokens=10, spec_verify_ct=4, accept_length=2.5,
                      spec_accept_histogram=[1, 1, 2], spec_cap_histogram=[0, 2, 2])
    b = RequestResult(ok=True, completion_tokens=6, spec_verify_ct=2, accept_length=3.0,
                      spec_accept_histogram=[0, 0, 2], spec_cap_histogram=None)
    run = run_event(0, [a, b], 1.0, 2, None)
    assert run.spec_accept_histogram == [1, 1, 4]
    # b came without caps: its 2 steps had the full budget, so the pooled caps still count every step
    assert run.spec_cap_histogram == [0, 2, 4]
    from_runs = acceptance.pool_pairs([([1, 1], None), ([0, 0], None)])
    assert from_runs == ([1, 1], None)  # no caps anywhere: none invented


COUNTERS = """\
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{is_streaming="true",model_name="m"}} {gen_s}
sglang:generation_tokens_total{{is_streaming="false",model_name="m"}} {gen_n}
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{{model_name="m"}} {verify}
sglang:spec_accept_length{{tp_rank="0",dp_rank="0"}} 1.7
sglang:num_retracted_requests_total{{tp_rank="0",dp_rank="0"}} 2.0
sglang:num_retracted_requests_total{{tp_rank="1",dp_rank="0"}} 2.0
"""


def test_counter_window_gives_the_exact_accept_length():
    window = CounterWindow()
    first = window.fields(parse_counters(COUNTERS.format(gen_s=100, gen_n=50, verify=60)))
    assert "accept_length" not in first and first["retractions_total"] == 2  # a TP replica is not added
    later = window.fields(parse_counters(COUNTERS.format(gen_s=400, gen_n=50, verify=160)))
    assert later["accept_length"] == pytest.approx(300 / 100)
    idle = window.fields(parse_counters(COUNTERS.format(gen_s=400, gen_n=50, verify=160)))
    assert idle["accept_length"] is None


def test_both_name_spellings_read_the_same():
    text = COUNTERS.format(gen_s=1, gen_n=2, verify=3) + 'sglang:num_running_reqs{tp_rank="0"} 4\nsglang:kv_available_tokens{tp_rank="0"} 900\n'
    assert parse_metrics(text.replace("sglang:", "sglang_")) == parse_metrics(text)
    assert parse_counters(text.replace("sglang:", "sglang_")) == parse_counters(text)
    assert parse_metrics(text)["kv_available_tokens"] == 900


BASE = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--enable-metrics", "--sim-step-ms", "2",
        "--speculative-algorithm", "EAGLE3"]


@pytest.mark.parametrize("extra", [[], ["--sim-spec-adaptive", "--sim-metric-names", "underscore"]])
@pytest.mark.slow
async def test_simulated_eagle3_acceptance_per_position_matches_its_configuration(extra):
    configured = (0.9, 0.7, 0.5)
    with sim_process.SimProcess([*BASE, "--sim-spec-accept", ",".join(map(str, configured)), *extra], speed=100) as sim:
        sim.wait_ready(60)
        events, stop = [], asyncio.Event()
        poller = asyncio.create_task(run_metrics_poller(events.append, sim.url, interval_s=0.1, stop=stop))
        settings = BenchSettings(max_new_tokens=200, runs=3, requests_per_run=4, concurrency=2,
                                 warmup_requests=1, flush_cache=False)
        await asyncio.wait_for(BenchLoop(events.append, sim.url, settings).run(), 120)
        stop.set()
        await asyncio.wait_for(poller, 5)
    reqs = [e for e in events if isinstance(e, RequestDone) and e.ok]
    assert all(r.spec_accept_histogram and sum(r.spec_accept_histogram) == r.spec_verify_ct for r in reqs)
    runs = [e for e in events if isinstance(e, RunDone)]
    pooled = acceptance.pool(r.spec_accept_histogram for r in runs)
    caps = acceptance.pool(r.spec_cap_histogram for r in runs) if extra else None
    got = [p.conditional for p in acceptance.per_position(pooled, caps)]
    assert got == pytest.approx(configured, abs=0.02)  # within 2 points
    if extra:  # position 3 is seen by half the steps only
        assert acceptance.per_position(pooled, caps)[2].observed_steps < 0.6 * sum(pooled)
    # the /metrics window figure is the exact tokens / verify calls (either spelling)
    windows = [s.accept_length for s in events if isinstance(s, ServerStats) and s.accept_length]
    assert windows and all(1.0 <= w <= 4.0 for w in windows)


async def test_openai_streams_carry_the_histogram_in_sglext():
    with sim_process.SimProcess([*BASE, "--sim-spec-adaptive"], speed=100) as sim:
        sim.wait_ready(60)
        events = []
        settings = BenchSettings(api="chat", max_new_tokens=60, runs=1, warmup_requests=0, flush_cache=False)
        await asyncio.wait_for(BenchLoop(events.append, sim.url, settings).run(), 60)
    (req,) = [e for e in events if isinstance(e, RequestDone)]
    assert req.ok and sum(req.spec_accept_histogram) == req.spec_verify_ct
    assert sum(req.spec_cap_histogram) == req.spec_verify_ct  # adaptive: the budgets came too
