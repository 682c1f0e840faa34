"""Server-side figures: /metrics parsing, /server_info, the poller, fetch_server_info."""

import asyncio
from pathlib import Path

import orjson
import pytest

from tuiapp.events import ServerStats
from tuiapp.server.info import ServerUnreachable, fetch_server_info
from tuiapp.server.metrics_poll import parse_metrics, parse_server_info, run_metrics_poller
from tuiapp.sim.http import serve
from tuiapp.sim.testserver import FakeSGLang

DATA = Path(__file__).parent / "data" / "bench"


def test_parse_metrics_sums_dp_groups_and_ignores_tp_replicas():
    got = parse_metrics((DATA / "metrics_dp2.txt").read_text())
    assert got == {
        "gen_throughput_tok_s": 179.0,  # 90.5 + 88.5; the TP1 replica of DP1 is not added
        "running_reqs": 5,
        "token_usage": 0.31,  # the fullest DP group
        "accept_length": 3.0,
        "accept_rate": pytest.approx((0.5 + 0.833) / 2),
        "cuda_graph": True,
    }


def test_parse_metrics_idle_spec_gauge_is_not_a_value():
    text = "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{tp_rank=\"0\"} 0.0\n"
    assert parse_metrics(text) == {"accept_length": None, "accept_rate": None}


def test_parse_metrics_skips_non_finite_values():
    text = ('sglang:num_running_reqs{tp_rank="0"} +Inf\n'
            'sglang:num_queue_reqs{tp_rank="0"} NaN\n'
            'sglang:gen_throughput{tp_rank="0"} NaN\n'
            'sglang:token_usage{tp_rank="0"} 0.5\n')
    assert parse_metrics(text) == {"token_usage": 0.5}


def test_parse_server_info_internal_states():
    info = {"internal_states": [{"last_gen_throughput": 89.3, "avg_spec_accept_length": 2.4},
                                {"last_gen_throughput": 10.0}]}
    assert parse_server_info(info) == {"gen_throughput_tok_s": pytest.approx(99.3), "accept_length": 2.4}
    assert parse_server_info({"decode": [{"internal_states": [{"last_gen_throughput": 5}]}]}) == {
        "gen_throughput_tok_s": 5.0, "accept_length": None}
    assert parse_server_info({"tp_size": 8}) is None


@pytest.mark.parametrize("metrics", [True, False])
async def test_poller_reads_server_info_only_without_metrics(metrics):
    """/server_info gives the same two figures as /metrics: it is asked only when /metrics
    cannot give them (each ask is a scheduler RPC and an access-log line)."""
    srv = FakeSGLang(step_s=0.01, tokens_per_chunk=3, spec=True, metrics=metrics)
    await srv.start()
    events, stop = [], asyncio.Event()
    task = asyncio.create_task(run_metrics_poller(events.append, srv.url, interval_s=0.05, stop=stop))
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.wait_for(task, 5)
    await srv.stop()
    by_source = {e.source: e for e in events if isinstance(e, ServerStats)}
    if metrics:
        m = by_source["metrics"]
        assert (m.gen_throughput_tok_s, m.accept_length, m.accept_rate, m.running_reqs) == (300.0, 3.0, 2 / 3, 1)
        assert sum(e.source == "metrics" for e in events) >= 3  # every interval
        assert "server_info" not in by_source
        assert not any(path.endswith("server_info") for path in srv.paths_seen)
    else:
        assert by_source["server_info"].gen_throughput_tok_s == 300.0
        assert by_source["server_info"].accept_length == 3.0
        assert "metrics" not in by_source


async def test_poller_survives_a_dead_server():
    events, stop = [], asyncio.Event()
    task = asyncio.create_task(run_metrics_poller(events.append, "http://127.0.0.1:1", interval_s=0.02, stop=stop))
    await asyncio.sleep(0.1)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 5)
    assert events == []


@pytest.mark.parametrize("old", [False, True])
async def test_fetch_server_info(old):
    srv = FakeSGLang(spec=True, api_key="k-12345678", old_paths_only=old)
    await srv.start()
    info = await fetch_server_info(srv.url, api_key="k-12345678")
    await srv.stop()
    assert info.model_path == "/models/fake" and info.version == "0.5.23-fake"
    assert (info.tp_size, info.ep_size) == (8, 1)
    assert info.speculative_algorithm == "EAGLE3" and info.speculative_num_draft_tokens == 4
    assert info.server_args["api_key"] == "***"
    assert "k-12345678" not in info.model_dump_json()


async def test_fetch_server_info_errors():
    with pytest.raises(ServerUnreachable, match="cannot connect"):
        await fetch_server_info("http://127.0.0.1:1", timeout_s=1)
    srv = FakeSGLang(api_key="right-key")
    await srv.start()
    with pytest.raises(ServerUnreachable, match="HTTP 401"):
        await fetch_server_info(srv.url, api_key="wrong-key")
    await srv.stop()


@pytest.mark.parametrize("bodies", [
    # not SGLang, and an OpenAI-style list whose data is not a list
    {"/v1/models": {"object": "list", "data": {"id": "m"}}},
    # a PD router whose decode side is not an object; odd types in the args
    {"/server_info": {"decode": ["x"], "model_path": ["a"], "speculative_algorithm": 5, "tp_size": "8"}},
])
async def test_fetch_server_info_odd_shapes_are_unknowns(bodies):
    async def handler(req, conn):
        body = bodies.get(req.path)
        conn.respond(200 if body is not None else 404, orjson.dumps(body or {"detail": "Not Found"}))

    server = await serve(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        info = await fetch_server_info(f"http://127.0.0.1:{port}", timeout_s=2)
    finally:
        server.close()
    assert info.model_path is None and info.speculative_algorithm is None and info.tp_size is None
