"""Real SGLang 0.5.23 on CPU (no speculative decoding, one DP rank): what tuiapp shows for
acceptance, what it reads from /v1/loads, and the start-up breakdown from its /metrics.

The CPU server runs no speculation: its spec gauges read 0.0 and its requests carry no
histogram, so acceptance must be "off" (the printer's spec=off and summary, the dashboard's
store folding the per-position panel), never a 0. Its /v1/loads answers with per-rank
snapshots (no per-rank timestamp in 0.5.23's JSON): the wedge detector's source stays on it and
flags nothing on a working server. Its /metrics carries the start-up phases.
"""

from __future__ import annotations

import asyncio
import io

import httpx
import pytest
from real_sglang import RealServer, venv

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.events import Alert, RequestDone, RunDone, ServerStats
from tuiapp.record.printer import Printer
from tuiapp.server.info import fetch_server_info
from tuiapp.server.loads_poll import LoadsSource, parse_v1_loads
from tuiapp.server.metrics_poll import run_metrics_poller
from tuiapp.server.ports import free_port
from tuiapp.server.wedge import WedgeDetector
from tuiapp.tui.store import DashboardStore

pytestmark = [pytest.mark.real_sglang, pytest.mark.timeout(600)]


async def _measure(url: str) -> tuple[list, LoadsSource]:
    events: list = []
    info = await fetch_server_info(url)
    events.append(info)
    stop = asyncio.Event()
    detector = WedgeDetector()
    poller = asyncio.create_task(run_metrics_poller(events.append, url, interval_s=0.5, stop=stop, detector=detector))
    settings = BenchSettings(max_new_tokens=24, runs=2, requests_per_run=2, concurrency=2, warmup_requests=1,
                             flush_cache=False)
    await asyncio.wait_for(BenchLoop(events.append, url, settings).run(), 300)
    await asyncio.sleep(1.0)  # a poll after the last request
    stop.set()
    await asyncio.wait_for(poller, 10)
    source = LoadsSource(url)
    async with httpx.AsyncClient() as client:
        judged, ranks = await source.poll(client, 0.0, 0.5)
    assert judged and ranks is not None and detector.source == "/v1/loads"
    return events, source


def test_real_server_without_speculation_and_its_loads(tmp_path):
    real = RealServer(venv(), tmp_path / "real.log", free_port())
    try:
        real.wait_ready()
        body = httpx.get(real.url + "/v1/loads?include=core", timeout=10).json()
        events, source = asyncio.run(_measure(real.url))
    finally:
        real.stop()
    # /v1/loads: one DP rank's snapshot, its request counts as numbers; no fallback needed
    assert set(body) >= {"timestamp", "version", "loads"} and body["version"] == "0.5.23"
    (rank,) = parse_v1_loads(body)
    assert rank.dp_rank == 0 and rank.running == 0 and rank.waiting == 0
    assert source.path == "/v1/loads" and not source.is_rpc
    assert not [e for e in events if isinstance(e, Alert) and e.alert_kind == "hang"]  # a working server

    # no speculation: no figure of acceptance anywhere, and "off" where it is shown
    (info,) = events[:1]
    assert info.speculative_algorithm is None and "speculative_algorithm" in info.server_args
    reqs = [e for e in events if isinstance(e, RequestDone) and e.ok]
    assert reqs and all(r.spec_accept_histogram is None and r.accept_length is None for r in reqs)
    stats = [e for e in events if isinstance(e, ServerStats)]
    assert stats and all(s.accept_length is None and s.accept_rate is None for s in stats)
    out = io.StringIO()
    printer = Printer(out)
    store = DashboardStore()
    for e in events:
        printer.handle(e)
        store.apply(e)
    lines = out.getvalue().splitlines()
    assert any(" info " in line and line.endswith(" spec=off") for line in lines)
    runs = [line for line in lines if " run " in line]
    assert len(runs) == len([e for e in events if isinstance(e, RunDone)]) == 2
    assert all(" accept=n/a " in line and "accept_pos" not in line for line in runs)
    assert "speculative decoding: off" in printer.summary()
    # the dashboard folds the per-position panel and its header says spec off
    assert store.speculating is False and store.spec_tally.requests == 0

    # the server's own start-up breakdown, read from its /metrics
    (startup,) = [s for s in stats if s.startup_phases_s]
    assert startup.startup_phases_s["tokenizer_e2e"] > startup.startup_phases_s["load_weight"] > 0
    assert set(startup.startup_cuda_graph_s) >= {"decode", "prefill"}
    assert "server startup: tokenizer_e2e=" in printer.summary()
