"""Decode pacing: a client measuring (completion_tokens - 1) / (e2e - ttft) sees the model's rate."""

import threading
import time

import httpx
import orjson
import pytest

from tuiapp.sim.acceptance import AcceptSampler
from tuiapp.sim.args import parse_args
from tuiapp.sim.model import expected_tok_s, plan_for
from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]


def measure(url: str, max_new: int) -> tuple[float, dict, list[int]]:
    """Client-side decode tok/s, final meta_info, and tokens per chunk."""
    body = {"text": "What is the capital of France? Answer in detail please.", "stream": True,
            "sampling_params": {"max_new_tokens": max_new, "ignore_eos": True, "temperature": 0}}
    t_first = t_last = None
    per_chunk, last_n, meta = [], 0, {}
    with httpx.stream("POST", url + "/generate", json=body, timeout=60) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            now = time.perf_counter()
            meta = orjson.loads(line[6:])["meta_info"]
            t_first = t_first or now
            t_last = now
            per_chunk.append(meta["completion_tokens"] - last_n)
            last_n = meta["completion_tokens"]
    return (meta["completion_tokens"] - 1) / (t_last - t_first), meta, per_chunk


def test_accept_sampler_tracks_the_mean_and_is_seeded():
    p, steps = 0.81, 3
    expected = sum(p**j for j in range(steps + 1))
    model_freq = [p**j * (1 - p) for j in range(steps)] + [p**steps]
    long = AcceptSampler(1, p, steps)
    draws = [long.draw() for _ in range(4000)]
    for value, freq in enumerate(model_freq, start=1):
        assert draws.count(value) / len(draws) == pytest.approx(freq, abs=0.03)
    for seed in range(50):  # every short request averages to the model
        a = AcceptSampler(seed, p, steps)
        assert sum(a.draw() for _ in range(85)) / 85 == pytest.approx(expected, rel=0.01)
    b, c = AcceptSampler(7, p, steps), AcceptSampler(7, p, steps)
    assert [b.draw() for _ in range(50)] == [c.draw() for _ in range(50)]


@pytest.mark.slow
def test_default_config_paces_at_89_5():
    with SimProcess(BASE) as sim:
        sim.wait_ready()
        tok_s, meta, per_chunk = measure(sim.url, 100)
    assert set(per_chunk) == {1}
    assert tok_s == pytest.approx(89.5, rel=0.01)


@pytest.mark.slow
def test_continuous_decode_steps_stream_in_groups():
    old = BASE + ["--cuda-graph-max-bs", "512", "--mem-fraction-static", "0.88", "--num-continuous-decode-steps", "4"]
    with SimProcess(old) as sim:
        sim.wait_ready()
        tok_s, _, per_chunk = measure(sim.url, 81)
    assert per_chunk[0] == 1 and set(per_chunk[1:]) == {4}
    assert tok_s == pytest.approx(expected_tok_s(old), rel=0.01) and expected_tok_s(old) == pytest.approx(82.0)


@pytest.mark.slow
def test_speculative_pacing_matches_verify_steps():
    eagle = BASE + ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d"]
    plan = plan_for(parse_args(eagle), {})
    with SimProcess(eagle) as sim:
        sim.wait_ready()
        tok_s, meta, per_chunk = measure(sim.url, 90)
    # e2e - ttft is exactly spec_verify_ct steps of the modelled verify step
    assert tok_s == pytest.approx((meta["completion_tokens"] - 1) / (meta["spec_verify_ct"] * plan.step_s), rel=0.01)
    assert tok_s == pytest.approx(plan.expected_tok_s, rel=0.05)
    assert max(per_chunk) > 1


def test_batching_queue_and_stream_interval():
    args = BASE + ["--max-running-requests", "2", "--stream-interval", "5", "--sim-step-ms", "4", "--decode-log-interval", "5"]
    with SimProcess(args) as sim:
        sim.wait_ready()
        results = {}

        def go(i):
            body = {"text": f"request {i}", "stream": True, "sampling_params": {"max_new_tokens": 21, "ignore_eos": True}}
            with httpx.stream("POST", sim.url + "/generate", json=body, timeout=30) as r:
                results[i] = [orjson.loads(line[6:])["meta_info"]["completion_tokens"]
                              for line in r.iter_lines() if line.startswith("data: {")]

        threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sim.wait_for("#running-req: 2")
        err = sim.stderr
    assert all(v == [1, 6, 11, 16, 21] for v in results.values()), results
    assert "#queue-req: 2" in err or "#queue-req: 1" in err
    assert "Decode batch, #running-req: 3" not in err
