"""The benchmark loop, poller and server-info fetch against the simulator (tuiapp.sim).

The simulator runs with a short decode step (--sim-step-ms) so a test takes seconds; the
pacing figures at the campaign's real step times are in benchmarks/bench_fidelity.py.
"""

import asyncio

import pytest

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.events import Alert, BenchState, RequestDone, RunDone, ServerStats
from tuiapp.server.info import fetch_server_info
from tuiapp.server.metrics_poll import run_metrics_poller

sim_process = pytest.importorskip("tuiapp.sim.process")

BASE = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--enable-metrics", "--sim-step-ms", "3"]


@pytest.fixture(scope="module")
def eagle():
    with sim_process.SimProcess([*BASE, "--speculative-algorithm", "EAGLE3"], speed=100) as sim:
        sim.wait_ready(60)
        yield sim


def settings(**kw):
    base = dict(max_new_tokens=40, runs=2, warmup_requests=1, flush_cache=True)
    base.update(kw)
    return BenchSettings(**base)


@pytest.mark.parametrize("api", ["generate", "completions", "chat"])
async def test_loop_on_simulated_eagle3(eagle, api):
    events = []
    loop = BenchLoop(events.append, eagle.url, settings(api=api))
    await asyncio.wait_for(loop.run(), 60)
    reqs = [e for e in events if isinstance(e, RequestDone)]
    assert len(reqs) == 2 and all(r.ok for r in reqs), [r.error for r in reqs]
    for r in reqs:
        assert r.completion_tokens == 40 and r.finish_reason == "length"
        # SGLang's per-request accept length is completion tokens / verify steps
        assert r.accept_length == pytest.approx(40 / r.spec_verify_ct)
        assert 1.0 <= r.tokens_per_chunk <= 4.0  # 3 draft steps: at most 4 tokens a step
        assert r.tpot_s == pytest.approx((r.e2e_s - r.ttft_s) / 39)
    runs = [e for e in events if isinstance(e, RunDone)]
    assert [r.run_index for r in runs] == [0, 1]
    assert runs[0].accept_length == pytest.approx(40 / reqs[0].spec_verify_ct)


async def test_server_info_and_metrics_from_simulator(eagle):
    info = await fetch_server_info(eagle.url)
    assert info.tp_size == 8 and info.speculative_algorithm == "EAGLE3"
    assert info.model_path == "/models/Kimi-K2.5" and info.version
    events, stop = [], asyncio.Event()
    poller = asyncio.create_task(run_metrics_poller(events.append, eagle.url, interval_s=0.1, stop=stop))
    loop = BenchLoop(events.append, eagle.url, settings(runs=3, max_new_tokens=200, flush_cache=False))
    await asyncio.wait_for(loop.run(), 60)
    stop.set()
    await asyncio.wait_for(poller, 5)
    stats = [e for e in events if isinstance(e, ServerStats)]
    assert {s.source for s in stats} == {"metrics"}  # /server_info only stands in without /metrics
    assert any((s.gen_throughput_tok_s or 0) > 0 for s in stats if s.source == "metrics")


@pytest.mark.slow
async def test_nan_fault_from_simulator():
    with sim_process.SimProcess([*BASE, "--sim-fault", "nan@0.3"], speed=100) as sim:
        sim.wait_ready(60)
        events = []
        loop = BenchLoop(events.append, sim.url, settings(runs=6, max_new_tokens=60, warmup_requests=0, flush_cache=False))
        await asyncio.wait_for(loop.run(), 60)
    reqs = [e for e in events if isinstance(e, RequestDone)]
    assert sum(r.numerical_fault for r in reqs) == 1
    alerts = [e for e in events if isinstance(e, Alert)]
    assert len(alerts) == 1 and alerts[0].alert_kind == "numerical"


@pytest.mark.slow
async def test_loop_waits_while_the_simulator_restarts():
    """Killed mid-benchmark, relaunched on the same port (answering 503 while it starts):
    the loop waits, says so, and finishes its runs on the new server."""
    sim = sim_process.SimProcess(BASE, speed=100)
    try:
        sim.wait_ready(60)
        events = []
        loop = BenchLoop(events.append, sim.url, settings(runs=6, max_new_tokens=30, flush_cache=False))
        task = asyncio.create_task(loop.run())
        while len([e for e in events if isinstance(e, RunDone)]) < 2:
            await asyncio.sleep(0.01)
        sim.proc.kill()
        sim.wait_exit(10)
        await asyncio.sleep(0.3)
        sim = sim_process.SimProcess(BASE, speed=100, port=sim.port)
        await asyncio.wait_for(task, 60)
    finally:
        sim.stop()
    states = [e.state for e in events if isinstance(e, BenchState)]
    assert "waiting_server" in states and states[-1] == "done"
    runs = [e for e in events if isinstance(e, RunDone)]
    assert len(runs) == 6 and runs[-1].errors == 0


async def test_check_output_hashes_the_first_prompts_the_same_way_twice(eagle):
    from tuiapp.events import OutputCheck

    digests = []
    for _ in range(2):
        events = []
        loop = BenchLoop(events.append, eagle.url, settings(runs=1, check_output=True, flush_cache=False))
        await asyncio.wait_for(loop.run(), 60)
        (check,) = [e for e in events if isinstance(e, OutputCheck)]
        digests.append(check.digests)
    assert len(digests[0]) == 4 and digests[0] == digests[1]  # greedy output, one at a time: the same
    assert len(set(digests[0].values())) == 4  # four prompts, four texts
    with pytest.raises(ValueError, match="temperature 0"):
        settings(check_output=True, temperature=0.7)
