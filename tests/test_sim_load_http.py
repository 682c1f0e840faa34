"""Load behaviour seen from outside the simulator process: what a client and /metrics show.

The engine-level figures are in test_sim_load.py (virtual clock); here a real simulator
process with a tiny KV pool and a 1 ms step answers concurrent requests over HTTP.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]


def generate(url: str, ids: list[int], max_new: int) -> dict:
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": max_new, "ignore_eos": True}}
    return httpx.post(url + "/generate", json=body, timeout=30).json()


@pytest.mark.slow
def test_small_pool_queues_retracts_and_reports_it() -> None:
    argv = [*BASE, "--max-total-tokens", "1000", "--enable-metrics", "--sim-step-ms", "1",
            "--decode-log-interval", "5"]
    with SimProcess(argv) as sim:
        sim.wait_ready()
        with ThreadPoolExecutor(8) as pool:
            outs = list(pool.map(lambda i: generate(sim.url, list(range(1000 + 100 * i, 1010 + 100 * i)), 300),
                                 range(8)))
        metrics = httpx.get(sim.url + "/metrics", timeout=10).text
        log = sim.stderr
    assert all(o["meta_info"]["completion_tokens"] == 300 for o in outs)
    retracted = sum(o["meta_info"]["num_retractions"] for o in outs)
    lines = re.findall(r"KV cache pool is full\. Retract requests\. #retracted_reqs: (\d+), "
                       r"#new_tokens_gained: \d+, #new_token_ratio: \d\.\d{4} -> \d\.\d{4}", log)
    assert retracted > 0 and sum(map(int, lines)) == retracted
    m = re.search(r"^sglang:num_retracted_requests_total\{[^}]*\} (\S+)$", metrics, re.M)
    assert m and float(m[1]) == retracted
    assert max(o["meta_info"]["queue_time"] for o in outs) > 0  # not all 8 fit at once
    assert re.search(r"#queue-req: [1-9]", log)


def test_shared_prefix_is_cached_and_reported_in_usage() -> None:
    with SimProcess([*BASE, "--enable-cache-report", "--sim-step-ms", "1"]) as sim:
        sim.wait_ready()
        system = "You are a careful assistant. " * 40
        usage = []
        for question in ("What is the capital of France?", "Name three prime numbers."):
            body = {"model": "x", "max_tokens": 4, "messages": [
                {"role": "system", "content": system}, {"role": "user", "content": question}]}
            usage.append(httpx.post(sim.url + "/v1/chat/completions", json=body, timeout=10).json()["usage"])
    first, second = (u.get("prompt_tokens_details") or {} for u in usage)
    assert first.get("cached_tokens", 0) == 0
    # the system prompt (and the template around it) is a shared prefix, the question is not
    assert 200 < second["cached_tokens"] < usage[1]["prompt_tokens"] - 4
