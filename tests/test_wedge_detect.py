"""A wedged scheduler rank from per-rank load snapshots: the detector, the three sources, the simulator."""

import asyncio

import httpx
import pytest

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.events import Alert, Note
from tuiapp.server.loads_poll import (
    LoadsSource,
    parse_get_load,
    parse_server_info_ranks,
    parse_v1_loads,
)
from tuiapp.server.metrics_poll import run_metrics_poller
from tuiapp.server.wedge import RankLoad, WedgeDetector

sim_process = pytest.importorskip("tuiapp.sim.process")


def rank(r, stamp, running=2, waiting=0, tput=50.0):
    return RankLoad(r, running, waiting, tput, stamp)


def test_a_rank_whose_snapshot_stops_while_busy_is_flagged_after_the_stall():
    d = WedgeDetector(stall_s=5.0)
    assert d.observe(0.0, [rank(0, "a"), rank(1, "x")]) == []
    assert d.observe(1.0, [rank(0, "b"), rank(1, "x")]) == []
    assert d.observe(4.9, [rank(0, "c"), rank(1, "x")]) == []
    out = d.observe(5.0, [rank(0, "d"), rank(1, "x")])
    assert len(out) == 1 and isinstance(out[0], Alert)
    alert = out[0]
    assert alert.alert_kind == "hang" and alert.dp_ranks == [1] and alert.source == "loads"
    assert "DP rank 1 wedged" in alert.message and "2 running" in alert.message
    assert d.observe(6.0, [rank(0, "e"), rank(1, "x")]) == []  # said once
    # rank 0 wedges too: the same incident, re-sent with both ranks
    d.observe(7.0, [rank(0, "f"), rank(1, "x")])
    again = d.observe(12.0, [rank(0, "f"), rank(1, "x")])
    assert again[0].alert_id == alert.alert_id and again[0].dp_ranks == [0, 1]
    # rank 1 moves again: a note, and a later wedge is a new incident
    back = d.observe(13.0, [rank(0, "g"), rank(1, "y")])
    assert any(isinstance(e, Note) and "DP rank 1 is moving again" in e.text for e in back)
    # another detector (the next trial's poller) numbers its incidents after this one's
    other = WedgeDetector(stall_s=5.0)
    other.observe(0.0, [rank(0, "z")])
    assert other.observe(5.0, [rank(0, "z")])[0].alert_id > alert.alert_id


def test_idle_ranks_may_stand_still():
    d = WedgeDetector(stall_s=5.0)
    for t in range(30):
        assert d.observe(float(t), [rank(0, "same", running=0, waiting=0, tput=0.0)]) == []


def test_zero_throughput_while_requests_wait_is_flagged_after_the_starved_window():
    d = WedgeDetector(stall_s=5.0, starved_s=15.0)
    out = []
    for t in range(17):  # the snapshot moves (queue figures change) but nothing is generated
        out += d.observe(float(t), [RankLoad(0, 0, 3, 0.0, ("moving", t))])
    assert len(out) == 1 and "no tokens generated for 15 s" in out[0].message


def test_unanswered_polls_count_as_standing_still():
    d = WedgeDetector(stall_s=5.0)
    d.observe(0.0, [rank(0, 1)])
    assert d.observe(3.0, None) == []
    out = d.observe(5.5, None)
    assert out and out[0].dp_ranks == [0]


def test_busy_hint_stands_in_where_a_source_has_no_request_counts():
    d = WedgeDetector(stall_s=5.0)
    ranks = [RankLoad(0, None, None, 10.0, 7)]
    d.observe(0.0, ranks, busy_hint=False)
    assert d.observe(9.0, None, busy_hint=False) == []
    d2 = WedgeDetector(stall_s=5.0)
    d2.observe(0.0, ranks, busy_hint=True)
    assert d2.observe(5.0, None, busy_hint=True)


def test_parsers_take_the_three_shapes_and_refuse_others():
    body = {"timestamp": "2026-10-01T00:00:00+00:00", "version": "0.5.23", "loads": [
        {"dp_rank": 0, "num_running_reqs": 3, "num_waiting_reqs": 1, "gen_throughput": 12.5, "num_used_tokens": 99},
        {"dp_rank": 1, "num_running_reqs": 0, "num_waiting_reqs": 0, "gen_throughput": 0.0, "timestamp": 1.5e9}]}
    ranks = parse_v1_loads(body)
    assert [(r.dp_rank, r.running, r.waiting, r.gen_throughput) for r in ranks] == [(0, 3, 1, 12.5), (1, 0, 0, 0.0)]
    assert ranks[1].stamp == 1.5e9  # a per-rank timestamp, where a server sends one, is the stamp
    assert parse_v1_loads({"detail": "Not Found"}) is None and parse_v1_loads([1]) is None
    old = parse_get_load([{"dp_rank": 0, "num_reqs": 5, "num_waiting_reqs": 2, "num_tokens": 10}], 7)
    assert [(r.running, r.waiting, r.stamp) for r in old] == [(3, 2, 7)]
    info = parse_server_info_ranks({"internal_states": [{"last_gen_throughput": 9.0}, "junk"]}, 3)
    assert [(r.dp_rank, r.gen_throughput) for r in info] == [(0, 9.0), (1, None)]
    assert parse_server_info_ranks({"tp_size": 1}, 0) is None


async def test_source_falls_back_from_v1_loads_to_get_load_to_server_info():
    hits = []

    def handler(request: httpx.Request) -> httpx.Response:
        hits.append(request.url.path)
        if request.url.path == "/server_info":
            return httpx.Response(200, json={"internal_states": [{"last_gen_throughput": 1.0}]})
        return httpx.Response(404, json={"detail": "Not Found"})

    src = LoadsSource("http://s")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        assert await src.poll(client, 0.0, 1.0, before_server_info=True) == (False, None)
        assert hits == ["/v1/loads", "/get_load"] and src.at_server_info
        judged, ranks = await src.poll(client, 0.0, 1.0)
    assert judged and ranks[0].gen_throughput == 1.0 and src.path == "/server_info"
    assert src.next_s == 2.0  # an RPC: at most every 2 s


@pytest.mark.parametrize("names", ["colon", "underscore"])
@pytest.mark.slow
async def test_simulated_wedged_rank_is_flagged_with_its_rank(names):
    """DP 2; the last DP rank wedges 1 s after ready: the poller names rank 1, long before
    the simulator's watchdog (300 s). Latency figures: benchmarks/wedge_detect.py."""
    args = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--dp-size", "2", "--enable-dp-attention", "--enable-metrics",
            "--sim-step-ms", "3", "--sim-fault", "rank_hang@1", "--sim-metric-names", names,
            "--watchdog-timeout", "3000"]  # the simulated watchdog (/ speed 100) stays 30 s away
    with sim_process.SimProcess(args, speed=100) as sim:
        sim.wait_ready(60)
        events, stop = [], asyncio.Event()
        poller = asyncio.create_task(run_metrics_poller(events.append, sim.url, interval_s=0.1, stop=stop,
                                                        detector=WedgeDetector(stall_s=1.0)))
        settings = BenchSettings(max_new_tokens=2000, runs=None, concurrency=4, warmup_requests=0, flush_cache=False)
        bench = asyncio.create_task(BenchLoop(events.append, sim.url, settings).run())
        try:
            for _ in range(300):
                if any(isinstance(e, Alert) and e.source == "loads" for e in events):
                    break
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            bench.cancel()
            await asyncio.gather(bench, return_exceptions=True)
            await asyncio.wait_for(poller, 5)
    alerts = [e for e in events if isinstance(e, Alert) and e.source == "loads"]
    assert alerts and alerts[0].alert_kind == "hang" and alerts[0].dp_ranks == [1]


@pytest.mark.slow
async def test_an_older_server_is_judged_by_get_load_timeouts():
    """No /v1/loads (before SGLang #23010): /get_load, a scheduler RPC, stops answering when a
    rank wedges; its timeouts count as a snapshot that did not change, busy as /metrics says."""
    args = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--dp-size", "2", "--enable-dp-attention",
            "--enable-metrics", "--sim-step-ms", "3", "--sim-fault", "rank_hang@1", "--sim-old-loads",
            "--watchdog-timeout", "3000"]
    with sim_process.SimProcess(args, speed=100) as sim:
        sim.wait_ready(60)
        events, stop = [], asyncio.Event()
        poller = asyncio.create_task(run_metrics_poller(events.append, sim.url, interval_s=0.1, stop=stop,
                                                        detector=WedgeDetector(stall_s=1.0)))
        settings = BenchSettings(max_new_tokens=2000, runs=None, concurrency=4, warmup_requests=0, flush_cache=False)
        bench = asyncio.create_task(BenchLoop(events.append, sim.url, settings).run())
        try:
            for _ in range(300):
                if any(isinstance(e, Alert) and e.source == "loads" for e in events):
                    break
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            bench.cancel()
            await asyncio.gather(bench, return_exceptions=True)
            await asyncio.wait_for(poller, 5)
    alerts = [e for e in events if isinstance(e, Alert) and e.source == "loads"]
    assert alerts and alerts[0].alert_kind == "hang" and "/get_load" in alerts[0].message
    assert alerts[0].dp_ranks  # every rank the RPC stands for (it cannot say which one hangs)
