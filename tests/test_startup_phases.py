"""SGLang's own start-up breakdown: read from /metrics in both spellings (the real 0.5.23 exposition
and the main branch's registry phases and after-ready counter), published once per server life,
shown by the headless printer, kept in a ledger row's details and exported."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import httpx
import pytest
from prometheus_client import generate_latest

from tuiapp.common import startup_phases
from tuiapp.events import ServerState, ServerStats
from tuiapp.record.metrics_endpoint import MetricsEndpoint
from tuiapp.record.printer import Printer
from tuiapp.server.metrics_poll import MetricsState, _poll_metrics, parse_startup
from tuiapp.tui.screens.details import _server_startup

REAL = Path(__file__).parent / "data" / "bench" / "metrics_sglang_0.5.23_cpu.txt"  # the real server's

# the main branch: registry phases in the same gauge, two TP ranks' counters of lazy JIT after ready
MAIN = """\
# TYPE sglang:startup_time_seconds gauge
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="load_weight"} 110.0
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="distributed_init"} 4.0
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="deepgemm_jit"} 30.0
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="draft_deepgemm_jit"} 7.0
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="scheduler_e2e"} 150.0
sglang:startup_time_seconds{engine_type="unified",model_name="m",phase="tokenizer_e2e"} 163.5
sglang:startup_time_seconds{engine_type="other",model_name="m",phase="load_weight"} 100.0
sglang:startup_cuda_graph_time_seconds{engine_type="unified",model_name="m",phase="decode"} 9.0
sglang:startup_cuda_graph_time_seconds{engine_type="unified",model_name="m",phase="draft_decode"} 2.5
sglang:post_startup_time_seconds_total{model_name="m",phase="deepgemm_jit",tp_rank="0"} 5.0
sglang:post_startup_time_seconds_total{model_name="m",phase="deepgemm_jit",tp_rank="1"} 4.0
sglang:startup_time_seconds{phase="[red]x\\u001b"} 3.0
sglang:startup_time_seconds{phase="kv_cache_allocation"} NaN
sglang:startup_time_seconds{phase="warmup"} -1
sglang:num_running_reqs{tp_rank="0"} 2
"""


def test_the_real_0_5_23_exposition_in_either_spelling():
    text = REAL.read_text()
    got = parse_startup(text)
    assert got["startup_phases_s"] == pytest.approx({
        "load_weight": 0.03296396299992921, "kv_cache_allocation": 0.588541431000067,
        "scheduler_e2e": 2.8686568349999106, "tokenizer_e2e": 27.334702901000128})
    assert set(got["startup_cuda_graph_s"]) == {"prefill", "decode", "target_verify", "draft_prefill",
                                                "draft_decode", "draft_extend"}
    assert "post_startup_s" not in got  # 0.5.23 has no after-ready counter
    assert parse_startup(text.replace("sglang:", "sglang_")) == got
    assert startup_phases.text(got["startup_phases_s"], got["startup_cuda_graph_s"]) == (
        "tokenizer_e2e=27.33s scheduler_e2e=2.87s load_weight=0.03s kv_cache_allocation=0.59s cuda_graph=0.00s")


def test_main_branch_phases_the_slowest_series_and_hostile_labels():
    got = parse_startup(MAIN)
    # the slowest series of a phase is the critical path; NaN, negative and odd phase names are no reading
    assert got["startup_phases_s"] == {"load_weight": 110.0, "distributed_init": 4.0, "deepgemm_jit": 30.0,
                                       "draft_deepgemm_jit": 7.0, "scheduler_e2e": 150.0, "tokenizer_e2e": 163.5}
    assert got["post_startup_s"] == 5.0  # ranks compile in parallel
    # named phases first, the registry's longest first; they nest, so no sum is shown
    assert [p for p, _ in startup_phases.parts(got["startup_phases_s"], got["startup_cuda_graph_s"])] == [
        "tokenizer_e2e", "scheduler_e2e", "load_weight", "cuda_graph", "deepgemm_jit", "draft_deepgemm_jit",
        "distributed_init"]
    assert startup_phases.as_json(got["startup_phases_s"], got["startup_cuda_graph_s"], 5.0) == {
        "total_s": 163.5, "phases_s": got["startup_phases_s"], "cuda_graph_s": {"decode": 9.0, "draft_decode": 2.5},
        "post_startup_s": 5.0}
    assert startup_phases.as_json(None, None) == {} and parse_startup("sglang:num_running_reqs 1\n") == {}


def test_the_poller_publishes_the_breakdown_when_first_seen_and_when_it_changes():
    bodies = [MAIN, MAIN, MAIN.replace("} 5.0", "} 6.5"), MAIN.replace("163.5", "170.0")]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=bodies.pop(0))

    async def polls() -> list[ServerStats]:
        events: list = []
        state = MetricsState()
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            for _ in range(4):
                await _poll_metrics(client, "http://s", events.append, state)
        return events

    first, same, jit, restarted = asyncio.run(polls())
    assert first.startup_phases_s["tokenizer_e2e"] == 163.5 and first.post_startup_s == 5.0
    assert (same.startup_phases_s, same.startup_cuda_graph_s, same.post_startup_s) == (None, None, None)
    assert (jit.startup_phases_s, jit.post_startup_s) == (None, 6.5)
    assert restarted.startup_phases_s["tokenizer_e2e"] == 170.0 and restarted.startup_cuda_graph_s is None
    assert same.running_reqs == 2  # the rest of the poll is untouched


def test_printer_prints_the_breakdown_once_after_ready_and_in_its_summary():
    out = io.StringIO()
    p = Printer(out)
    got = parse_startup(MAIN)
    p.handle(ServerState(state="ready", url="http://s", startup_s=170.2, t_s=100.0))
    p.handle(ServerStats(source="metrics", running_reqs=0, t_s=101.0, **got))
    p.handle(ServerStats(source="metrics", running_reqs=1, t_s=102.0))
    p.handle(ServerStats(source="metrics", post_startup_s=6.5, t_s=103.0))
    lines = out.getvalue().splitlines()
    startup = [line for line in lines if " startup tokenizer_e2e=" in line]
    assert len(startup) == 1 and "server" in startup[0]
    assert "tokenizer_e2e=163.50s scheduler_e2e=150.00s load_weight=110.00s cuda_graph=11.50s" in startup[0]
    assert "  server startup: tokenizer_e2e=163.50s" in p.summary() and "after_ready=6.50s" in p.summary()


class _Unserved:  # the registry is what is under test; serving it over HTTP is test_metrics_endpoint's
    server_port = 0

    def shutdown(self) -> None:
        pass

    def server_close(self) -> None:
        pass


def test_ledger_details_and_the_prometheus_endpoint(monkeypatch):
    monkeypatch.setattr("tuiapp.record.metrics_endpoint.start_http_server", lambda *a, **k: (_Unserved(), None))
    got = parse_startup(MAIN)
    row = startup_phases.as_json(got["startup_phases_s"], got["startup_cuda_graph_s"], got["post_startup_s"])
    assert _server_startup(row).startswith("tokenizer_e2e=163.50s") and _server_startup(row).endswith("after_ready=5.00s")
    assert _server_startup({}) == _server_startup({"phases_s": "x"}) == _server_startup(None) == "n/a"
    ep = MetricsEndpoint("127.0.0.1", 0)
    try:
        ep.apply(ServerStats(source="metrics", **got))
        text = generate_latest(ep.registry).decode()
    finally:
        ep.close()
    assert 'tuiapp_server_startup_seconds{phase="cuda_graph"} 11.5' in text
    assert 'tuiapp_server_startup_seconds{phase="after_ready"} 5.0' in text
