"""The simulator under load: the scheduler driven on a virtual clock (no sleeping, exact times).

Each test builds the engine from the simulator's own flags (plan_for), submits requests and
steps a virtual clock through the scheduler's deadlines, so the modelled times come out
exactly and a run of hundreds of requests takes milliseconds.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from tuiapp.sim import model
from tuiapp.sim.args import parse_args
from tuiapp.sim.engine import Scheduler
from tuiapp.sim.gpus import GpuFarm
from tuiapp.sim.metrics import render_metrics
from tuiapp.sim.radix import RadixCache
from tuiapp.sim.request import SimRequest
from tuiapp.sim.server import SimServer

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
MAX_TURNS = 2_000_000  # event-loop turns before a drive is declared stuck (no wall clock)


class VirtualClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    async def sleep(self, delay: float) -> None:
        self.t += delay
        await asyncio.sleep(0)


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, msg: str, rank=None) -> None:
        self.lines.append(msg)


class Rig:
    def __init__(self, *flags: str, radix: bool = True) -> None:
        argv = [*BASE, *flags]
        self.server = SimServer(argv, env={})
        self.plan = self.server.plan
        self.clock = VirtualClock()
        self.log = Lines()
        self.sched = Scheduler(self.plan, self.log, None, GpuFarm(8), seed=0, decode_log_interval=10,
                               radix_cache=radix, clock=self.clock, sleep=self.clock.sleep)
        self.server.scheduler = self.sched
        self.n = 0

    def request(self, prompt_ids: list[int], max_new: int) -> SimRequest:
        self.n += 1
        return SimRequest(f"r{self.n}", list(prompt_ids), max_new, True, [], self.n, lambda r: None, True)

    async def drive(self, reqs: list[SimRequest], arrivals_s: list[float] | None = None) -> None:
        """Submit each request at its arrival time (default: all at once) and run to the end."""
        task = asyncio.create_task(self.sched.run())
        pending = sorted(zip(arrivals_s or [0.0] * len(reqs), range(len(reqs)), strict=True))
        t0 = self.clock.t
        turns = 0
        while any(r.finish_reason is None for r in reqs):
            while pending and self.clock.t >= t0 + pending[0][0]:
                self.sched.submit(reqs[pending.pop(0)[1]])
            if pending and not self.sched.running and not self.sched.waiting and not self.sched.busy:
                self.clock.t = t0 + pending[0][0]  # idle (no prefill in flight either): jump to the next arrival
            await asyncio.sleep(0)
            turns += 1
            assert turns < MAX_TURNS, "scheduler stopped making progress"
        task.cancel()

    def decode_rate(self, r: SimRequest) -> float:
        return (r.completion_tokens - 1) / (r.t_done - r.t_first)


def prompt(n: int, start: int = 1000) -> list[int]:
    return list(range(start, start + n))


def aggregate_tok_s(reqs: list[SimRequest]) -> float:
    t0 = min(r.t_arrive for r in reqs)
    return sum(r.completion_tokens for r in reqs) / (max(r.t_done for r in reqs) - t0)


async def test_single_stream_keeps_the_campaign_figures() -> None:
    for flags, tok_s in (((), 89.5), (("--cuda-graph-max-bs", "512"), 85.30),
                         (("--cuda-graph-max-bs", "512", "--num-continuous-decode-steps", "4",
                           "--mem-fraction-static", "0.88"), 82.0)):
        rig = Rig(*flags)
        r = rig.request(prompt(20), 128)
        await rig.drive([r])
        assert rig.decode_rate(r) == pytest.approx(tok_s, abs=0.01)
        assert r.t_first - r.t_arrive == pytest.approx(model.INGRESS_S + model.PREFILL_BASE_S + 20 * model.PREFILL_PER_TOKEN_S)


async def test_step_cost_grows_with_batch_and_batching_still_raises_throughput() -> None:
    rig = Rig()
    reqs = [rig.request(prompt(20, 1000 + 100 * i), 64) for i in range(16)]
    await rig.drive(reqs)
    per_stream = rig.decode_rate(reqs[1])  # the burst's head decoded alone through the others' prefill
    assert per_stream == pytest.approx(89.5 / (1 + model.BATCH_GROWTH * 15), rel=1e-6)
    assert aggregate_tok_s(reqs) > 10 * 89.5 * 64 / (64 + 6)  # ~14x one stream, less prefill time
    assert any("#running-req: 16," in line for line in rig.log.lines if line.startswith("Decode batch"))


async def test_a_burst_reaches_the_scheduler_one_at_a_time_and_its_head_is_prefilled_alone() -> None:
    # as the real 0.5.23 CPU server split 8 requests sent within 0.2 ms: 1 + 7
    rig = Rig()
    reqs = [rig.request(prompt(20, 1000 + 100 * i), 8) for i in range(8)]
    await rig.drive(reqs)
    prefills = [line for line in rig.log.lines if line.startswith("Prefill batch")]
    assert [re.search(r"#new-seq: (\d+),", line).group(1) for line in prefills] == ["1", "7"]
    ready = [r.t_ready - r.t_arrive for r in reqs]
    assert ready == pytest.approx([model.INGRESS_S * (i + 1) for i in range(8)])
    head_ttft = reqs[0].t_first - reqs[0].t_arrive
    assert all(r.t_first - r.t_arrive > head_ttft + model.PREFILL_BASE_S for r in reqs[1:])


async def test_prefill_cost_grows_with_input_length_and_chunks() -> None:
    ttft = {}
    for n in (100, 4000, 20000):
        rig = Rig()
        r = rig.request(prompt(n), 4)
        await rig.drive([r])
        ttft[n] = r.t_first - r.t_arrive
    passes_20k = -(-20000 // model.CHUNKED_PREFILL_SIZE)  # 3 chunks of 8192
    assert ttft[100] == pytest.approx(model.INGRESS_S + model.PREFILL_BASE_S + 100 * model.PREFILL_PER_TOKEN_S)
    assert ttft[4000] == pytest.approx(model.INGRESS_S + model.PREFILL_BASE_S + 4000 * model.PREFILL_PER_TOKEN_S)
    assert ttft[20000] == pytest.approx(model.INGRESS_S + passes_20k * model.PREFILL_BASE_S + 20000 * model.PREFILL_PER_TOKEN_S)


async def _aggregate_at(max_bs: str, streams: int) -> tuple[float, Rig]:
    rig = Rig("--cuda-graph-max-bs", max_bs)
    reqs = [rig.request(prompt(16, 1000 + 50 * i), 96) for i in range(streams)]
    await rig.drive(reqs)
    return aggregate_tok_s(reqs), rig


async def test_batches_above_cuda_graph_max_bs_run_eagerly_and_the_order_flips() -> None:
    low_1, _ = await _aggregate_at("128", 1)
    high_1, _ = await _aggregate_at("512", 1)
    low_200, rig128 = await _aggregate_at("128", 200)
    high_200, rig512 = await _aggregate_at("512", 200)
    assert low_1 > high_1  # the campaign's single-stream order
    assert high_200 > 1.3 * low_200  # flipped once batches exceed 128
    decode128 = [line for line in rig128.log.lines if line.startswith("Decode batch, #running-req: 200,")]
    decode512 = [line for line in rig512.log.lines if line.startswith("Decode batch, #running-req: 200,")]
    assert decode128 and all("cuda graph: False" in line for line in decode128)
    assert decode512 and all("cuda graph: True" in line for line in decode512)
    assert rig128.sched.cuda_graph_passes_total["decode_none"] > 0
    assert rig512.sched.cuda_graph_passes_total["decode_none"] == 0
    # the eager step is the no-graph factor at the same knobs, times the batch growth
    plan = rig128.plan
    assert plan.step_s_for_batch(200) == pytest.approx(
        plan.step_s * model.NO_CUDA_GRAPH_FACTOR * (1 + model.BATCH_GROWTH * 199))
    assert plan.step_s_for_batch(100) == pytest.approx(plan.step_s * (1 + model.BATCH_GROWTH * 103))  # padded to 104


async def test_decode_max_bs_flag_spelling_also_caps_graphs() -> None:
    _, rig = await _aggregate_at("128", 1)
    plan = Rig("--cuda-graph-max-bs-decode", "64").plan
    assert not plan.uses_graph(65) and plan.uses_graph(64)
    assert rig.plan.uses_graph(128) and not rig.plan.uses_graph(129)


async def test_requests_queue_when_the_kv_pool_is_full() -> None:
    rig = Rig("--max-total-tokens", "2000")
    reqs = [rig.request(prompt(100, 1000 + 200 * i), 100) for i in range(16)]
    await rig.drive(reqs)
    # the burst's head reaches the scheduler alone (model.INGRESS_S); the next batch takes what
    # fits: a new request needs 100 in + 100 out + 1 page = 201 tokens, and beside the running
    # one (101 held, 0.7 x 99 reserved) 9 fit in 2000; the other 6 wait for room
    prefills = [line for line in rig.log.lines if line.startswith("Prefill batch")]
    assert "#new-seq: 1," in prefills[0]
    assert "#new-seq: 9," in prefills[1] and "#queue-req: 6," in prefills[1]
    by_admit = sorted(reqs, key=lambda r: r.t_admit)
    queued = by_admit[10:]
    assert min(r.queue_s for r in queued) > max(r.queue_s for r in by_admit[:10])
    assert min(r.t_first for r in queued) > max(r.t_first for r in by_admit[:10])
    assert all(r.completion_tokens == 100 for r in reqs)
    assert rig.sched.h_queue.total == 16
    assert "sglang:queue_time_seconds_count" in render_metrics(rig.server)


async def test_a_full_pool_retracts_requests_logs_counts_and_resumes_them() -> None:
    # a new request needs 10 + 300 + 1 tokens: 3 fit in the first batch; once running they
    # reserve only 0.7 x their remaining output, so a 4th is admitted and 4 x 310 overruns 1000
    rig = Rig("--max-total-tokens", "1000")
    reqs = [rig.request(prompt(10, 1000 + 100 * i), 300) for i in range(6)]
    await rig.drive(reqs)
    retract = [line for line in rig.log.lines if line.startswith("KV cache pool is full.")]
    assert retract, "no retraction"
    m = re.match(r"KV cache pool is full\. Retract requests\. #retracted_reqs: (\d+), "
                 r"#new_tokens_gained: (\d+), #new_token_ratio: (\d\.\d{4}) -> (\d\.\d{4})$", retract[0])
    assert m and int(m[1]) >= 1 and int(m[2]) > 0 and float(m[4]) > float(m[3])
    total = sum(int(re.search(r"#retracted_reqs: (\d+)", line)[1]) for line in retract)
    assert rig.sched.retracted_total == total == sum(r.retractions for r in reqs)
    # every request still finishes with all its tokens, the retracted ones later
    assert all(r.completion_tokens == 300 and r.finish_reason["type"] == "length" for r in reqs)
    assert all(len(r.output_ids) == 300 for r in reqs)
    assert any(r.retractions for r in reqs)
    roomy = Rig()  # the same requests (same salts) with room: a retraction changes no token
    alone = [roomy.request(prompt(10, 1000 + 100 * i), 300) for i in range(6)]
    await roomy.drive(alone)
    assert [r.output_ids for r in reqs] == [r.output_ids for r in alone]
    text = render_metrics(rig.server)
    assert re.search(rf"^sglang:num_retracted_requests_total\{{.*\}} {total}\.0$", text, re.M)
    assert re.search(r"^sglang:num_retracted_reqs\{.*\} [1-9]", text, re.M)
    assert "sglang:num_retracted_output_tokens_total" in text
    # the pool was never overrun by a decode step
    for line in rig.log.lines:
        if line.startswith("Decode batch"):
            assert int(re.search(r"#token: (\d+)", line)[1]) <= 1000


async def test_radix_cache_hits_for_shared_prefixes() -> None:
    rig = Rig()
    shared = prompt(500, 50_000)
    a = rig.request(shared + prompt(30, 1000), 8)
    b = rig.request(shared + prompt(30, 2000), 8)
    again = rig.request(shared + prompt(30, 2000), 8)
    await rig.drive([a, b, again], arrivals_s=[0.0, 1.0, 2.0])
    assert (a.cached_tokens, b.cached_tokens, again.cached_tokens) == (0, 500, 529)
    # the hit shortens prefill: only the uncached tokens cost
    assert b.t_first - b.t_arrive == pytest.approx(model.INGRESS_S + model.PREFILL_BASE_S + 30 * model.PREFILL_PER_TOKEN_S)
    assert rig.sched.cached_tokens_total == 1029
    text = render_metrics(rig.server)
    assert re.search(r'^sglang:cached_tokens_total\{cache_source="device",.*\} 1029\.0$', text, re.M)
    off = Rig(radix=False)
    reqs = [off.request(shared, 8) for _ in range(2)]
    await off.drive(reqs, arrivals_s=[0.0, 1.0])
    assert [r.cached_tokens for r in reqs] == [0, 0]


def test_radix_cache_evicts_least_recently_used_branches() -> None:
    cache = RadixCache()
    cache.insert([1, 2, 3, 4])
    cache.insert([9, 8, 7])
    cache.insert([1, 2, 5])
    assert cache.nodes == 8 and cache.match([1, 2, 5, 6]) == 3
    cache.match([9, 8])  # now the most recent
    cache.evict_to(4)
    assert cache.match([1, 2, 3]) == 0 and cache.match([9, 8, 7]) == 3 and cache.nodes == 3
    cache.evict_to(0)
    assert cache.nodes == 0 and not cache.roots


async def test_open_loop_arrivals_below_capacity_do_not_queue() -> None:
    rig = Rig()
    reqs = [rig.request(prompt(64, 1000 + 100 * i), 32) for i in range(40)]
    await rig.drive(reqs, arrivals_s=[0.5 * i for i in range(40)])  # 2 req/s, each done in ~0.4 s
    assert max(r.queue_s for r in reqs) < model.PREFILL_BASE_S + 64 * model.PREFILL_PER_TOKEN_S + 0.02


def test_flags_parse_into_the_plan() -> None:
    plan = model.plan_for(parse_args([*BASE, "--max-total-tokens", "4096", "--chunked-prefill-size", "1024"]), {})
    assert plan.kv_tokens == 4096 and plan.chunked_prefill_size == 1024
    assert plan.prefill_s(2048) == pytest.approx(2 * model.PREFILL_BASE_S + 2048 * model.PREFILL_PER_TOKEN_S)
