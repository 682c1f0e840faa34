"""Wedge detection on the simulator: how soon a wedged DP rank is flagged, and what it costs.

Latency: the simulator serves DP 2 (attention DP on 8 modelled GPUs) under a closed loop of 4
streams; ``--sim-fault rank_hang@3`` wedges DP rank 1 three seconds after ready (start-up compressed 10x, so the simulated
300 s watchdog fires 30 s after the wedge). A watcher of
its own reads ``/v1/loads`` every 50 ms and notes when rank 1's snapshot last changed (the
wedge); the session's metrics poller (tuiapp.server.metrics_poll, 1 s ticks, the default
5 s stall) raises the ``hang`` alert. Latency = alert - last change, per repeat.

Cost: the poller's CPU per tick, with and without wedge detection (``/v1/loads?include=core``,
parse, detector), against the simulator at DP 1 and DP 8, interleaved, ``--ticks`` ticks each
(the poller's sleep taken out: back to back on the session's poll client, common/http_clients.py).

    .venv/bin/python benchmarks/wedge_detect.py [--repeats 3] [--ticks 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.common.http_clients import async_client
from tuiapp.events import Alert
from tuiapp.server import metrics_poll
from tuiapp.server.loads_poll import LoadsSource
from tuiapp.server.wedge import WedgeDetector
from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--enable-metrics", "--sim-step-ms", "5"]


async def _latency_once(fault_at_s: float) -> float:
    args = [*BASE, "--dp-size", "2", "--enable-dp-attention", "--sim-fault", f"rank_hang@{fault_at_s:g}"]
    # speed 10: the simulated watchdog (300 s) fires 30 s after the wedge, well after the alert
    with SimProcess(args, speed=10) as sim:
        sim.wait_ready(120)
        events: list = []
        stop = asyncio.Event()
        last_change = [0.0, None]  # (monotonic, snapshot) of rank 1

        async def watch() -> None:
            async with httpx.AsyncClient() as client:
                while not stop.is_set():
                    body = (await client.get(sim.url + "/v1/loads?include=core")).json()
                    snap = next(ld for ld in body["loads"] if ld["dp_rank"] == 1)
                    if snap != last_change[1]:
                        last_change[:] = [time.monotonic(), snap]
                    await asyncio.sleep(0.05)

        alert_at: list[float] = []

        def publish(event) -> None:
            events.append(event)
            if isinstance(event, Alert) and event.source == "loads" and not alert_at:
                alert_at.append(time.monotonic())

        tasks = [asyncio.create_task(watch()),
                 asyncio.create_task(metrics_poll.run_metrics_poller(publish, sim.url, interval_s=1.0, stop=stop)),
                 asyncio.create_task(BenchLoop(events.append, sim.url, BenchSettings(
                     max_new_tokens=100_000, runs=None, concurrency=4, warmup_requests=0, flush_cache=False)).run())]
        t0 = time.monotonic()
        while not alert_at and time.monotonic() - t0 < 60:
            await asyncio.sleep(0.05)
        stop.set()
        tasks[2].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if not alert_at:
        raise SystemExit("no hang alert within 60 s")
    alert = next(e for e in events if isinstance(e, Alert) and e.source == "loads")
    assert alert.dp_ranks == [1], alert
    return alert_at[0] - last_change[0]


async def _cost(dp: int, ticks: int) -> tuple[float, float]:
    """(CPU ms per /metrics poll, CPU ms per /v1/loads poll + detection), interleaved."""
    extra = ["--dp-size", str(dp), "--enable-dp-attention"] if dp > 1 else []
    with SimProcess([*BASE, *extra], speed=100) as sim:
        sim.wait_ready(60)
        async with async_client(sim.url) as client:  # the session's poll client
            state = metrics_poll.MetricsState()
            source, detector = LoadsSource(sim.url), WedgeDetector()
            metrics_s = loads_s = 0.0
            for _ in range(ticks):
                t = time.process_time()
                await metrics_poll._poll_metrics(client, sim.url, lambda e: None, state)
                metrics_s += time.process_time() - t
                t = time.process_time()
                _judged, ranks = await source.poll(client, 0.0, 1.0)
                detector.observe(time.monotonic(), ranks)
                loads_s += time.process_time() - t
    return metrics_s / ticks * 1000, loads_s / ticks * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=300)
    args = parser.parse_args()
    lat = [await _latency_once(3.0) for _ in range(args.repeats)]
    print(f"wedged DP rank flagged after (s): {', '.join(f'{x:.2f}' for x in lat)}; "
          f"median {statistics.median(lat):.2f}, max {max(lat):.2f} (poller tick 1 s, stall 5 s; watchdog 300 s)")
    for dp in (1, 8):
        m_ms, l_ms = await _cost(dp, args.ticks)
        print(f"DP {dp}: CPU per tick: /metrics poll {m_ms:.3f} ms, + /v1/loads and detection {l_ms:.3f} ms "
              f"({100 * l_ms / m_ms:.0f}% of the /metrics poll; {l_ms / 10:.3f}% of a core at 1 tick/s)")


if __name__ == "__main__":
    asyncio.run(main())
