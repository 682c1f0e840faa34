"""The real SGLang 0.5.23 CPU server with --max-queued-requests 1: flooded, tuiapp counts its
refusals as "refused" (never retried, never serial), and the simulator refuses with the same
bytes (issue 45)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from real_sglang import RealServer, venv

from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
from tuiapp.events import Note, RequestDone
from tuiapp.server.ports import free_port
from tuiapp.sim.process import SimProcess

pytestmark = [pytest.mark.real_sglang, pytest.mark.timeout(600)]

LIMITS = ("--max-running-requests", "2", "--max-queued-requests", "1")


@pytest.fixture(scope="module")
def real_url(tmp_path_factory):
    server = RealServer(venv(), tmp_path_factory.mktemp("overload") / "real.log", free_port(), *LIMITS)
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("api", ["generate", "chat"])
async def test_a_flooded_real_server_s_refusals_are_counted_as_refused(real_url, api):
    events: list = []
    s = BenchSettings(api=api, model=None if api == "generate" else "m", request_rate=100, requests_per_run=60,
                      runs=1, warmup_requests=0, max_new_tokens=16, slo_ttft_ms=2000)
    loop = BenchLoop(events.append, real_url, s)
    await asyncio.wait_for(loop.run(), 300)
    p = loop.points[0]
    reqs = [e for e in events if isinstance(e, RequestDone)]
    assert len(reqs) == p.requests == 60  # each sent once
    assert 0 < p.errors < 60 and p.errors_by_reason == {"refused": p.errors}
    assert all("The request queue is full." in r.error for r in reqs if not r.ok)
    assert p.served_request_rate < 0.5 * p.offered_request_rate and p.goodput_share < 0.5
    assert not [n for n in events if isinstance(n, Note) and "one request at a time" in n.text]


async def _refusals(url: str) -> dict[str, str]:
    """One refused answer of each kind: 8 requests at once to a server of 2 running, 1 queued."""
    bodies = {
        "generate": ("/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 8, "ignore_eos": True},
                                   "stream": True}),
        "chat": ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                          "max_tokens": 8, "stream": True, "stream_options": {"include_usage": True}}),
        "completions": ("/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 8, "stream": True,
                                            "stream_options": {"include_usage": True}}),
        "generate_no_stream": ("/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 8}}),
    }
    out: dict[str, str] = {}
    async with httpx.AsyncClient(timeout=120) as http:
        async def one(path: str, body: dict) -> tuple[int, str]:
            r = await http.post(url + path, json=body)
            return r.status_code, r.text

        for kind, (path, body) in bodies.items():
            answers = await asyncio.gather(*(one(path, body) for _ in range(8)))
            refused = [f"{status} {text}" for status, text in answers if "The request queue is full." in text]
            assert refused, f"{kind}: no refusal in {answers}"
            out[kind] = refused[0]
    return out


def _shape(answer: str) -> object:
    """An answer with its per-request values (ids, times, latencies) blanked."""
    status, _, text = answer.partition(" ")
    if not text.startswith("data: "):
        return status, json.loads(text)
    chunks = []
    for line in text.splitlines():
        if line.startswith("data: {"):
            obj = json.loads(line[6:])
            obj.pop("id", None)
            obj.pop("created", None)
            meta = obj.get("meta_info") or {}
            for key in ("id", "e2e_latency", "response_sent_to_client_ts"):
                if key in meta:
                    meta[key] = type(meta[key]).__name__
            chunks.append(obj)
        elif line.startswith("data: "):
            chunks.append(line)
    return status, chunks


async def test_the_simulator_refuses_as_the_real_server(real_url):
    real = await _refusals(real_url)
    with SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", *LIMITS]) as sim:
        sim.wait_ready()
        simulated = await _refusals(sim.url)
    for kind in real:
        assert _shape(simulated[kind]) == _shape(real[kind]), kind
    # the OpenAI error chunk byte for byte (json.dumps' spacing)
    error_line = next(line for line in real["chat"].partition(" ")[2].splitlines() if line.startswith('data: {"error"'))
    assert error_line in simulated["chat"].partition(" ")[2].splitlines()
