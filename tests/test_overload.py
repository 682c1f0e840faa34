"""Truth under stress (issue 45): every finding of its "Why" as a test that fails on the old
behaviour, against servers that misbehave as real ones do: FakeSGLang's concurrency cap with a
bounded queue, failed and empty requests and a server that dies; the simulator's
--max-queued-requests (SGLang 0.5.23's refusal, the older 503, the gateway's 429).

Rates here are the server's pacing (sleeps): a loaded box only makes a server slower, so the
bounds are "far below offered" and "not above what the server can do", never a time budget.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import pytest

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.common.verdict import meets_goal
from tuiapp.events import Note, RequestDone
from tuiapp.sim.process import SimProcess
from tuiapp.trials.collector import TrialCollector
from tuiapp.trials.ledger import Ledger, LedgerRow
from tuiapp.trials.plan import parse_plan
from tuiapp.trials.runner import PlanRunner, RunnerOptions

GUARD_S = 120  # a hung loop fails the test instead of hanging the suite; not a measurement


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


async def run_loop(url: str, s: BenchSettings) -> tuple[BenchLoop, list]:
    events: list = []
    loop = BenchLoop(events.append, url, s)
    await asyncio.wait_for(loop.run(), GUARD_S)
    return loop, events


def settings(**kw) -> BenchSettings:
    base = dict(api="generate", warmup_requests=0, max_new_tokens=32, runs=1)
    base.update(kw)
    return BenchSettings(**base)


async def closed_loop_capacity_req_s(url: str, streams: int, **kw) -> float:
    """The server's capacity measured on its own: closed loop with more streams than it runs
    at once (it is never idle), successful requests / wall time."""
    loop, _ = await run_loop(url, settings(concurrency=streams, requests_per_run=8 * streams, **kw))
    point = loop.points[0] if loop.points else None
    if point is not None and point.request_throughput_req_s:
        return point.request_throughput_req_s
    runs = loop.results
    ok = sum(r.requests - r.errors for r in runs)
    wall = sum(r.wall_s for r in runs)
    return ok / wall


# ---------------------------------------------------------------- a server that holds 4 streams


@pytest.mark.slow
async def test_200_req_s_at_a_4_stream_server_reports_what_it_served_and_counts_refusals(fake_sglang):
    # the case: 4 streams, the rest refused (429). Before: the loop went serial, retried
    # the refusals uncounted and reported a 100% SLO share with 4.8 req/s sent.
    srv = await fake_sglang(prefill_s=0.02, step_s=0.01, max_running=4, max_queued=0)
    s = settings(request_rate=200, requests_per_run=200, runs=2, slo_ttft_ms=1000)
    loop, events = await run_loop(srv.url, s)
    p = loop.points[0]
    reqs = of(events, RequestDone)
    assert p.requests == len(reqs) == 400 == srv.requests + srv.queue_refused  # each sent once, each counted
    assert srv.queue_refused > 0 and p.errors_by_reason == {"refused": srv.queue_refused}
    assert all(r.outcome == "refused" and r.error.startswith("HTTP 429") for r in reqs if not r.ok)
    assert p.refused_share == pytest.approx(srv.queue_refused / 400)
    capacity_req_s = 4 / (0.02 + 31 * 0.01)  # 4 streams of 32 tokens at the server's pacing
    assert p.offered_request_rate > 150 and p.sent_request_rate > 150  # the load asked for was kept
    assert p.served_request_rate < 0.25 * p.offered_request_rate
    assert p.served_request_rate < 3 * capacity_req_s
    assert p.goodput_share < 0.5
    assert not meets_goal(p)[0]
    assert srv.peak_running == 4  # never one at a time
    assert not [n for n in of(events, Note) if "one request at a time" in n.text]


@pytest.mark.slow
async def test_find_max_load_of_a_refusing_server_stays_below_what_it_can_serve(fake_sglang):
    # before: refusals were retried serially, every probe "passed", 320 req/s for a server of ~11
    srv = await fake_sglang(prefill_s=0.02, step_s=0.002, max_running=4, max_queued=0)
    capacity_req_s = await closed_loop_capacity_req_s(srv.url, 8)
    start = round(capacity_req_s * 0.8)
    s = settings(request_rate=start, requests_per_run=32, find_max_load=True, slo_ttft_ms=1000,
                 max_search_points=4)
    loop, events = await run_loop(srv.url, s)
    answer = loop.max_load
    assert answer is not None and answer["complete"]
    assert answer["probes"] == 4
    found = answer["request_rate"]
    assert found is None or found < capacity_req_s
    assert answer["first_failing"] is not None and answer["first_failing"] <= start  # refusals are misses
    assert "at least" not in answer["text"]
    assert sum(p.errors_by_reason.get("refused", 0) for p in loop.points) > 0


@pytest.mark.slow
async def test_queueing_behind_max_concurrency_is_latency(fake_sglang):
    # 40 req/s offered, at most 2 in flight to a server that takes 0.175 s a request: ~11 req/s
    # go through. Before: latency counted from the send, after the wait for a slot: every goal met.
    srv = await fake_sglang(prefill_s=0.02, step_s=0.005)
    probe = settings(request_rate=40, max_concurrency=2, requests_per_run=24, slo_ttft_ms=500,
                     find_max_load=True, max_search_points=2)
    loop, _ = await run_loop(srv.url, probe)
    p = loop.points[0]
    assert p.request_rate == 40
    assert p.errors == 0  # nothing failed: the requests waited in the client
    assert p.served_request_rate < 0.5 * p.offered_request_rate
    assert p.client_lag_p99_ms > 500 and p.ttft_p99_ms >= p.client_lag_p99_ms
    assert p.goodput_share < 0.99
    passed, why = meets_goal(p)
    assert not passed and "served" in why
    assert loop.max_load["request_rate"] is None and loop.max_load["text"].startswith("max load meeting the SLO: none")


async def test_a_burst_of_8_requests_is_not_a_rate_of_256(fake_sglang):
    # --requests-per-run 8 at 256 req/s: 8 requests sent in ~30 ms to a server that runs 4 at a
    # time. Before: "256 req/s met" while 27 were served.
    srv = await fake_sglang(prefill_s=0.02, step_s=0.005, max_running=4, max_queued=16)
    s = settings(request_rate=256, requests_per_run=8, slo_ttft_ms=2000, find_max_load=True, max_search_points=2)
    loop, _ = await run_loop(srv.url, s)
    first = loop.points[0]
    assert first.request_rate == 256 and first.errors == 0
    assert first.served_request_rate < 0.5 * 256
    assert not meets_goal(first)[0]
    assert loop.max_load["request_rate"] is None or loop.max_load["request_rate"] < 256
    assert loop.max_load["first_failing"] is not None


async def test_concurrency_search_holds_n_in_flight_and_says_at_least_when_nothing_failed(fake_sglang):
    # a plan's one request a run (the campaign's single stream) must not make "16 streams" a
    # probe with one request ever in flight
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002, max_running=64, max_queued=64)
    s = settings(concurrency=8, requests_per_run=1, find_max_load=True, slo_ttft_ms=5000, max_search_points=2,
                 max_new_tokens=16)
    loop, _ = await run_loop(srv.url, s)
    assert [p.concurrency for p in loop.points] == [8, 16]
    assert [p.requests for p in loop.points] == [8, 16]  # a run holds N requests, not the plan's 1
    assert srv.peak_running == 16
    answer = loop.max_load
    assert answer["concurrency"] == 16 and not answer["bracketed"]
    assert "at least 16 streams" in answer["text"]


async def test_no_failing_rate_probe_is_at_least_not_a_maximum(fake_sglang):
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002)
    s = settings(request_rate=8, requests_per_run=12, find_max_load=True, slo_ttft_ms=5000, max_search_points=2,
                 max_new_tokens=16)
    loop, _ = await run_loop(srv.url, s)
    answer = loop.max_load
    assert answer["request_rate"] == 16 and answer["first_failing"] is None
    assert answer["text"].startswith("max load meeting the SLO: at least 16 req/s")


# ---------------------------------------------------------------- the simulator's --max-queued-requests

SIM = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--sim-step-ms", "5", "--enable-metrics"]


@pytest.fixture(scope="module")
def queue_sims():
    """One simulator per refusal shape: 4 running, 1 queued, the rest refused."""
    sims = {mode: SimProcess([*SIM, "--max-running-requests", "4", "--max-queued-requests", "1",
                              "--sim-queue-full-status", mode]) for mode in ("abort", "503", "429")}
    try:
        for sim in sims.values():
            sim.wait_ready()
        yield sims
    finally:
        for sim in sims.values():
            sim.stop()


@pytest.mark.parametrize("mode, api, said", [
    ("abort", "generate", "aborted: The request queue is full."),  # 0.5.23: 200, in-stream abort
    ("abort", "chat", "server error: The request queue is full."),  # 0.5.23: 200, an error chunk
    ("503", "completions", "HTTP 503: The request queue is full."),
    ("429", "chat", "HTTP 429"),  # the gateway's empty 429
])
async def test_sglang_refusals_of_a_full_queue_are_counted_as_refused(queue_sims, mode, api, said):
    sim = queue_sims[mode]
    s = settings(api=api, model=None if api == "generate" else "m", request_rate=200, requests_per_run=100,
                 slo_ttft_ms=1000, max_new_tokens=16)
    loop, events = await run_loop(sim.url, s)
    p = loop.points[0]
    failed = [r for r in of(events, RequestDone) if not r.ok]
    assert p.requests == 100 and len(failed) == p.errors > 50
    assert p.errors_by_reason == {"refused": p.errors}
    assert all(r.error.startswith(said) for r in failed), {r.error for r in failed}
    assert p.served_request_rate < 0.5 * p.offered_request_rate and p.goodput_share < 0.5
    assert not meets_goal(p)[0]
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(sim.url + "/metrics")).text
    running = [float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("sglang:num_running_reqs")]
    assert running and max(running) <= 4




@pytest.mark.slow
async def test_max_running_requests_caps_the_batch():
    # 8 streams at once to a server of 2 running (no queue bound): all are served, never more than
    # 2 decoding together (a stream is decoding from its first output chunk to its last)
    in_flight = peak = 0

    async def one(http: httpx.AsyncClient, url: str) -> str:
        nonlocal in_flight, peak
        body = {"text": "hello", "sampling_params": {"max_new_tokens": 24, "ignore_eos": True}, "stream": True}
        last = ""
        async with http.stream("POST", url + "/generate", json=body) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: {"):
                    if not last:
                        in_flight += 1
                        peak = max(peak, in_flight)
                    last = line
        in_flight -= 1
        return last

    with SimProcess([*SIM, "--max-running-requests", "2"]) as sim:
        sim.wait_ready()
        async with httpx.AsyncClient(timeout=60) as http:
            finals = await asyncio.gather(*(one(http, sim.url) for _ in range(8)))
    assert all('"type":"length"' in f and '"completion_tokens":24' in f for f in finals)
    assert peak == 2


# ---------------------------------------------------------------- a server that dies mid-sweep


@pytest.mark.slow
async def test_a_sweep_whose_server_dies_midway_never_exits_0(fake_sglang, tmp_path):
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002, die_after=10)
    summary = tmp_path / "s.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tuiapp", "attach", srv.url, "--headless", "--telemetry", "off", "--api", "generate",
        "--sweep", "concurrency=1,2,4", "--runs", "2", "--max-new-tokens", "16", "--warmup", "0",
        "--server-wait-s", "1", "--summary", str(summary),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GUARD_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = out.decode()
    assert proc.returncode not in (0, None), text[-2000:]
    assert srv._server is None  # it did die, after 10 requests
    if summary.exists():  # what was measured before the death is kept, and not called complete
        points = json.loads(summary.read_text()).get("points") or []
        assert len(points) < 3


# ---------------------------------------------------------------- ranking and validity in the ledger

RANK_PLAN = """
[plan]
name = "overload"
[baseline]
model = "moonshotai/Kimi-K2.5"
flags = { tp = 8 }
bench = { runs = 2, concurrency = 16, requests_per_run = 16, max_new_tokens = 16, warmup_requests = 0 }
[search]
[search.flags]
max-running-requests = [1]
max-queued-requests = [1]
"""
REFUSER = "max-running-requests=1,max-queued-requests=1"


@pytest.mark.slow
def test_a_combination_that_fails_most_requests_never_ranks_best(tmp_path):
    # 16 streams at a server that runs 1 and queues 1: most are refused, and the few served
    # decode alone, faster per stream than the baseline's batch of 16. Before: ranked best.
    plan = tmp_path / "plan.toml"
    plan.write_text(RANK_PLAN)
    ledger = tmp_path / "ledger.json"
    out = subprocess.run([sys.executable, "-m", "tuiapp", "trials", str(plan), "--sim", "--sim-speed", "100",
                          "--headless", "--ledger", str(ledger)], capture_output=True, text=True, timeout=GUARD_S,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr
    rows = {r["name"]: r for r in json.loads(ledger.read_text())}
    bad, base = rows[REFUSER], rows["baseline"]
    assert bad["status"] == "ok" and bad["requests"] == 32
    assert bad["failed_requests"] >= 24 and bad["errors_by_reason"] == {"refused": bad["failed_requests"]}
    assert base["failed_requests"] == 0
    assert bad["error_verdict"] == "worse" and bad["dead_end"]
    assert (base["rank"], base["vs_best"]) == (1, "best")
    assert (bad["rank"], bad["vs_best"]) == (2, "more errors")
    assert "best by decode_tok_s: baseline" in out.stdout


LEDGER_PLAN = '[plan]\nname = "validity"\n[baseline]\nmodel = "m"\n'


@pytest.mark.parametrize("fault", ["empty", "404", "nan", "one_nan"])
async def test_a_trial_that_measured_nothing_useful_is_invalid_and_never_ranks_best(fake_sglang, tmp_path, fault):
    # each "faster" than the baseline if only speed counted: it decodes twice as fast
    good = await fake_sglang(prefill_s=0.01, step_s=0.002)
    bad = await fake_sglang(prefill_s=0.01, step_s=0.001, empty_output=fault == "empty", openai_only=fault == "404")
    bad.faults.extend({"nan": ["nan"] * 64, "one_nan": [None, "nan"]}.get(fault, []))
    runner = PlanRunner(parse_plan(LEDGER_PLAN, tmp_path / "p.toml"), [], Ledger(), RunnerOptions())
    rows = []
    for name, srv in (("baseline", good), ("trial", bad)):
        collector = TrialCollector()
        collector.benchmarking = True
        loop = BenchLoop(collector.observe, srv.url, settings(concurrency=4, requests_per_run=8, runs=2, max_new_tokens=16))
        await asyncio.wait_for(loop.run(), GUARD_S)
        row = LedgerRow(name=name, status="", is_baseline=name == "baseline")
        runner._fill(row, collector, "ok")  # the row a trial of that server gets
        rows.append(row)
    ledger = Ledger(rows)
    ledger.compare()
    ledger.rank()
    base, row = rows
    assert not base.invalid and (base.rank, base.vs_best) == (1, "best")
    assert row.invalid and row.dead_end and row.vs_best != "best" and row.verdict != "faster"
    if fault == "one_nan":  # it ran and has figures: ranked, but after every valid row
        assert row.invalid == ["1 request(s) finished with NaN"]
        assert (row.status, row.verdict, row.rank, row.vs_best) == ("ok", "invalid", 2, "invalid")
    else:  # every request failed: no figures to rank at all
        assert row.invalid[0] == f"all {row.requests} requests failed" and row.requests == 16
        assert row.status != "ok" and row.rank is None


# ---------------------------------------------------------------- tuiapp compare on recordings of such servers


async def _record(srv, path, *extra: str) -> int:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tuiapp", "attach", srv.url, "--headless", "--telemetry", "off", "--api", "generate",
        "--concurrency", "2", "--requests-per-run", "10", "--runs", "3", "--max-new-tokens", "16", "--warmup", "0",
        "--server-wait-s", "1", "--record", str(path), *extra,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        return await asyncio.wait_for(proc.wait(), GUARD_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def healthy_recording(fake_sglang, tmp_path):
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002)
    path = tmp_path / "base.jsonl"
    assert await _record(srv, path) == 0
    return path


def compare(base, new) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", "compare", str(base), str(new), "--fail-on", "slower"],
                          capture_output=True, text=True, timeout=GUARD_S, stdin=subprocess.DEVNULL)


async def test_compare_fails_when_new_fails_half_its_requests(fake_sglang, tmp_path, healthy_recording):
    # every 2nd request a 500, as fast otherwise. Before: exit 0 (only speed was compared)
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002, fail_every=2)
    new = tmp_path / "new.jsonl"
    assert await _record(srv, new) == 0
    out = compare(healthy_recording, new)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "failed requests 50.0% vs 0.0% (worse" in out.stdout


async def test_compare_cannot_judge_new_when_its_server_died(fake_sglang, tmp_path, healthy_recording):
    # NEW's server died after 12 requests (one run of three). Before: exit 0
    srv = await fake_sglang(prefill_s=0.01, step_s=0.002, die_after=12)
    new = tmp_path / "new.jsonl"
    assert await _record(srv, new) == 1  # attach itself gave up on the dead server
    out = compare(healthy_recording, new)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "exit 3 (NEW cannot be judged)" in out.stdout
