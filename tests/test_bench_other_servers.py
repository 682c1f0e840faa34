"""Servers that are not SGLang: detection, --api auto, refused fields, stream quirks, failures made visible."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import threading
from argparse import Namespace
from pathlib import Path

import pytest

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.commands.attach import for_server
from tuiapp.events import BenchState, Note, RequestDone, RunDone
from tuiapp.record.printer import run_line
from tuiapp.server.info import fetch_server_info
from tuiapp.sim.testserver import FakeSGLang


@pytest.fixture
async def server(fake_sglang):
    return await fake_sglang(prefill_s=0.01, step_s=0.003, tokens_per_chunk=1)


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


async def attach_settings(srv, api="auto", **kw) -> BenchSettings:
    """What attach would send to this server."""
    info = await fetch_server_info(srv.url)
    base = dict(max_new_tokens=20, runs=2, warmup_requests=1)
    base.update(kw)
    return for_server(BenchSettings(**base), info, Namespace(api=api))


async def run_loop(srv, s: BenchSettings):
    events: list = []
    loop = BenchLoop(events.append, srv.url, s)
    await asyncio.wait_for(loop.run(), 20)
    return loop, events


async def test_detects_sglang_and_other_servers(server):
    info = await fetch_server_info(server.url)
    assert info.engine == "sglang"
    s = await attach_settings(server)
    assert (s.api, s.sglang_extensions, s.flush_cache) == ("generate", True, True)
    server.openai_only = True
    info = await fetch_server_info(server.url)
    assert (info.engine, info.model_path) == ("openai", "fake-model")
    s = await attach_settings(server)
    assert (s.api, s.sglang_extensions, s.flush_cache) == ("chat", False, False)
    assert (await attach_settings(server, api="completions")).api == "completions"


async def test_other_server_gets_no_sglang_fields(server):
    server.openai_only = True
    server.refuse_fields = frozenset({"ignore_eos", "return_spec_tokens_details"})
    loop, events = await run_loop(server, await attach_settings(server))
    assert all(r.ok for r in of(events, RequestDone)) and len(loop.results) == 2
    assert server.refused == 0 and server.flushes == 0
    assert "ignore_eos" not in server.last_body and "messages" in server.last_body


@pytest.mark.parametrize("field", ["ignore_eos", "stream_options"])
async def test_refused_field_is_dropped_once_with_a_note(server, field):
    server.refuse_fields = frozenset({field})
    s = BenchSettings(api="chat", max_new_tokens=20, runs=2, warmup_requests=0, flush_cache=False)
    loop, events = await run_loop(server, s)
    reqs = of(events, RequestDone)
    assert len(reqs) == 2 and all(r.ok for r in reqs)  # the refusal was not a failed request
    assert server.refused == 1 and field not in server.last_body
    notes = [n.text for n in of(events, Note) if "refused" in n.text]
    assert len(notes) == 1 and f"'{field}'" in notes[0] and "HTTP 422: Unexpected fields" in notes[0]
    assert all(r.completion_tokens == 20 for r in reqs)  # without usage: one token per chunk


async def test_refusal_naming_no_field_we_can_drop_is_a_failure_with_its_reason(server):
    server.refuse_fields = frozenset({"max_tokens"})  # not optional: every request fails
    s = BenchSettings(api="chat", max_new_tokens=20, runs=1, warmup_requests=0, flush_cache=False)
    loop, events = await run_loop(server, s)
    (run,) = of(events, RunDone)
    assert run.errors == 1 and run.first_error.startswith("HTTP 422: Unexpected fields")
    assert "errors=1 (HTTP 422: Unexpected fields in the request: {'max_tokens'})" in run_line(run)
    summary = loop.summary()["runs"][0]
    assert summary["errors"] == 1 and summary["first_error"] == run.first_error


async def test_pydantic_422_echoing_the_request_drops_only_the_named_field(server):
    body = json.dumps({"detail": [{"type": "extra_forbidden", "loc": ["body", "return_spec_tokens_details"],
                                   "msg": "Extra inputs are not permitted",
                                   "input": {"ignore_eos": True, "stream_options": {}}}]}).encode()
    from tuiapp.bench.client import RequestResult

    loop = BenchLoop(lambda e: None, server.url, BenchSettings())
    res = RequestResult(http_status=422, error="HTTP 422: ...", error_body=body.decode())
    assert loop._drop_refused_field(res) and loop._omit == {"return_spec_tokens_details"}
    assert not loop._drop_refused_field(res)  # once


@pytest.mark.parametrize("quirk", ["no_done", "usage_in_last_chunk", "role_first", "all"])
async def test_stream_quirks_of_other_servers(server, quirk):
    server.openai_only = True
    for name in (["no_done", "usage_in_last_chunk", "role_first"] if quirk == "all" else [quirk]):
        setattr(server, name, True)
    loop, events = await run_loop(server, await attach_settings(server, max_new_tokens=24))
    reqs = of(events, RequestDone)
    assert len(reqs) == 2 and all(r.ok for r in reqs), [r.error for r in reqs]
    for r in reqs:
        assert r.completion_tokens == 24 and r.chunks == 24  # the role-only chunk is no output
        assert r.decode_tok_s == pytest.approx(23 / (r.e2e_s - r.ttft_s))
    assert not [n for n in of(events, Note) if "chunk" in n.text]  # usage was there


async def test_stream_cut_without_finish_or_done_is_still_a_failure(server):
    server.faults.append(b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n')
    s = BenchSettings(api="chat", max_new_tokens=20, runs=1, warmup_requests=0, flush_cache=False)
    _, events = await run_loop(server, s)
    (req,) = of(events, RequestDone)
    assert not req.ok and req.error == "stream ended before the request finished"


async def test_a_server_that_refuses_while_busy_gets_refusals_counted_and_the_load_kept(server):
    # 429 while another stream runs: a refusal is a failed request of its own reason, never
    # sent again and never a reason to go one at a time (the load asked for stays the load)
    server.openai_only = True
    server.one_at_a_time = True
    s = await attach_settings(server, concurrency=3, requests_per_run=6, runs=2, warmup_requests=0)
    loop, events = await run_loop(server, s)
    reqs = of(events, RequestDone)
    assert len(reqs) == 12  # no retries: 12 sent, 12 counted
    refused = [r for r in reqs if r.outcome == "refused"]
    assert refused and all(not r.ok and r.error.startswith("HTTP 429") for r in refused)
    assert len(refused) == server.refused
    assert sum(run.errors for run in loop.results) == len(refused)
    assert all(run.errors_by_reason == ({"refused": run.errors} if run.errors else {}) for run in of(events, RunDone))
    assert not [n for n in of(events, Note) if "one request at a time" in n.text]
    assert len([n for n in of(events, Note) if "refusals count as failed requests" in n.text]) == 1


async def test_server_that_cuts_the_running_stream_when_the_next_comes(server):
    server.openai_only = True
    server.no_usage = True
    server.interrupt = True  # llama-cpp-python
    s = await attach_settings(server, concurrency=2, requests_per_run=4, runs=3, warmup_requests=0)
    loop, events = await run_loop(server, s)
    reqs = of(events, RequestDone)
    cut = [r for r in reqs if not r.ok]
    assert cut and all(r.error == "stream ended before the request finished" for r in cut)
    assert all(r.ok and r.completion_tokens == 20 for r in reqs[len(cut) + 1:])  # then one at a time
    assert loop.results[-1].errors == 0
    notes = [n.text for n in of(events, Note) if "one request at a time" in n.text]
    assert len(notes) == 1 and "cut a stream short" in notes[0]


DATA = Path(__file__).parent / "data" / "other_servers"


@pytest.mark.parametrize("name, usage", [("transformers-5.24.0", True), ("llama-cpp-python-0.3.36", False)])
async def test_real_streams_of_other_servers(server, name, usage):
    """Streams captured from the real servers (docs/attach.md: Other OpenAI-compatible servers)."""
    stream = (DATA / f"{name}_chat_stream.sse").read_bytes()
    assert (b"data: [DONE]" in stream) is (not usage)  # transformers serve never sends it
    server.faults.append(stream)
    s = BenchSettings(api="chat", max_new_tokens=12, runs=1, warmup_requests=0, flush_cache=False,
                      sglang_extensions=False)
    _, events = await run_loop(server, s)
    (req,) = of(events, RequestDone)
    assert req.ok and req.completion_tokens == 12 and req.chunks == 12, req.error
    assert req.finish_reason == "length"
    chunk_notes = [n for n in of(events, Note) if "counting one token per streamed chunk" in n.text]
    assert len(chunk_notes) == (0 if usage else 1)


def test_real_422_of_transformers_serve_names_both_fields():
    from tuiapp.bench.client import RequestResult

    body, status = (DATA / "transformers-5.24.0_422.txt").read_text().split("\n")[:2]
    loop = BenchLoop(lambda e: None, "http://127.0.0.1:1", BenchSettings())
    res = RequestResult(http_status=int(status), error="HTTP 422: Unexpected fields", error_body=body)
    assert loop._drop_refused_field(res)
    assert loop._omit == {"ignore_eos", "return_spec_tokens_details"}


async def test_every_warmup_request_failing_stops_with_the_reason(server):
    server.refuse_fields = frozenset({"model"})
    s = BenchSettings(api="chat", max_new_tokens=20, warmup_requests=2, flush_cache=False)  # runs: forever
    loop, events = await run_loop(server, s)
    assert loop.results == [] and server.refused == 2
    assert loop.warmup_failed.startswith("HTTP 422: Unexpected fields in the request: {'model'}")
    assert of(events, BenchState)[-1].state == "failed"
    assert any(n.level == "error" and "every warm-up request failed (2 of 2)" in n.text for n in of(events, Note))


async def test_stop_mid_request_is_cancelled_not_failed(server):
    server.step_s = 0.02
    events: list = []
    s = BenchSettings(max_new_tokens=200, warmup_requests=0, flush_cache=False, runs=5)
    loop = BenchLoop(events.append, server.url, s)
    task = asyncio.create_task(loop.run())
    while server.streaming == 0:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    loop.stop()  # as a trial ends: stop the loop, then the server, which cuts the request off
    await server.stop()
    await asyncio.wait_for(task, 10)
    reqs = of(events, RequestDone)
    assert reqs and all(r.cancelled and not r.ok for r in reqs)
    assert not [n for n in of(events, Note) if "every request" in n.text]

    # a task cancelled mid-request (quit, SIGINT) publishes it as cancelled too
    await server.start()
    events.clear()
    loop = BenchLoop(events.append, server.url, s)
    task = asyncio.create_task(loop.run())
    before = server.requests
    while server.requests == before:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (req,) = of(events, RequestDone)
    assert req.cancelled and req.error.startswith("cancelled")


@contextlib.contextmanager
def threaded_server(**kw):
    """A FakeSGLang on its own thread, for a `tuiapp` subprocess to attach to."""
    ready = threading.Event()
    box: dict = {}

    def serve() -> None:
        async def main() -> None:
            srv = FakeSGLang(prefill_s=0.01, step_s=0.002, **kw)
            await srv.start()
            box["srv"], box["loop"], box["stop"] = srv, asyncio.get_running_loop(), asyncio.Event()
            ready.set()
            await box["stop"].wait()
            await srv.stop()
        asyncio.run(main())

    t = threading.Thread(target=serve)
    t.start()
    assert ready.wait(10)
    try:
        yield box["srv"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        t.join(10)


def attach(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", "attach", *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.slow
def test_attach_cli_against_an_other_server_with_quirks(tmp_path):
    """`tuiapp attach URL --headless --runs 3 --summary s.json`, no flags beyond the URL."""
    summary = tmp_path / "s.json"
    with threaded_server(openai_only=True, no_done=True, role_first=True, usage_in_last_chunk=True,
                         refuse_fields=frozenset({"ignore_eos"})) as srv:
        r = attach(srv.url, "--headless", "--runs", "3", "--summary", str(summary))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "openai-compatible server model=fake-model" in r.stdout
    assert len(re.findall(r"\brun\s+#\d.* errors=0", r.stdout)) == 3
    runs = json.loads(summary.read_text())["runs"]
    assert len(runs) == 3 and all(x["decode_tok_s"] and x["errors"] == 0 for x in runs)
    assert srv.refused == 0 and srv.flushes == 0


def test_attach_cli_exits_1_with_the_reason_when_warmup_fails():
    with threaded_server(openai_only=True, refuse_fields=frozenset({"max_tokens"})) as srv:
        r = attach(srv.url, "--headless", "--warmup", "2")
    assert r.returncode == 1
    assert "every warm-up request failed: HTTP 422: Unexpected fields in the request: {'max_tokens'}" in r.stderr
    assert "bench    failed every warm-up request failed" in r.stdout
    assert srv.refused == 2  # no looping


def test_headless_run_line_carries_the_first_failure():
    with threaded_server(openai_only=True) as srv:
        srv.faults.extend([b"", "http500", "http500"])  # an empty stream, then two HTTP 500s
        r = attach(srv.url, "--headless", "--runs", "2", "--warmup", "0", "--requests-per-run", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if re.search(r"\brun\s+#\d", ln)]
    assert "errors=2 (stream ended before the request finished)" in lines[0]
    assert "errors=1 (HTTP 500: internal boom)" in lines[1]


@pytest.mark.slow
def test_other_servers_benchmark_script_runs_against_a_paced_server():
    """benchmarks/other_servers.py end to end (its figures come from real servers: docs/attach.md)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "other_servers.py"
    with threaded_server(openai_only=True, no_done=True, usage_in_last_chunk=True, role_first=True) as srv:
        r = subprocess.run([sys.executable, str(script), srv.url, "--probe-runs", "2", "--max-tokens", "64",
                            "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["tuiapp_runs"]) == 3 and len(out["probe_runs"]) == 4
    # 2 ms per token: both near 500 tok/s, and near each other (loosely: a shared box)
    assert 0.8 < out["ratio_of_medians"] < 1.25, out
