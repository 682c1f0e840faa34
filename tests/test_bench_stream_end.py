"""A benchmark stream that stops at [DONE]: the body's end is read before the next request goes
(as bench_serving and AIPerf read a response to its end), its connection is kept, and
nothing is left for the event loop to close (each async generator left suspended costs the
loop a task and a self-pipe wake-up)."""

from __future__ import annotations

import asyncio
import sys

import orjson
import pytest
from test_bench_transport import serve

from tuiapp.bench.client import DONE_GRACE_S, stream_request
from tuiapp.bench.http_client import make_client
from tuiapp.bench.settings import Timeouts

N_TOKENS = 5


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _response(end_gap_s: float | None) -> list:
    """SGLang's /generate: N_TOKENS chunks, [DONE], then the body's end ``end_gap_s`` later
    (None: in the same write as [DONE]; uvicorn writes them apart)."""
    parts: list = [b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"]
    for i in range(1, N_TOKENS + 1):
        meta = {"completion_tokens": i, "prompt_tokens": 3,
                "finish_reason": {"type": "length", "length": N_TOKENS} if i == N_TOKENS else None}
        parts += [_chunk(b"data: " + orjson.dumps({"text": "x" * i, "meta_info": meta}) + b"\n\n"), 0.002]
    done = _chunk(b"data: [DONE]\n\n")
    if end_gap_s is None:
        return [*parts, done + b"0\r\n\r\n"]
    return [*parts, done, end_gap_s, b"0\r\n\r\n"]


@pytest.mark.parametrize("end_gap_s", [None, 0.0, 0.005, 2 * DONE_GRACE_S])
async def test_stream_stopped_at_done_keeps_its_connection(end_gap_s):
    server, url, seen = await serve([_response(end_gap_s)] * 3)
    finalized: list[object] = []
    hooks = sys.get_asyncgen_hooks()

    def count(agen) -> None:  # what the loop would close for us, later
        finalized.append(agen)
        hooks.finalizer(agen)

    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=count)
    try:
        async with make_client(Timeouts(), api_key=None, concurrency=1) as client:
            for _ in range(3):
                res = await stream_request(client, url + "/generate", "generate", b"{}", Timeouts(),
                                           expect_tokens=N_TOKENS)
                assert res.ok, res.error
                assert res.completion_tokens == N_TOKENS and res.chunks == N_TOKENS
    finally:
        sys.set_asyncgen_hooks(*hooks)
    server.close()
    assert len(seen["requests"]) == 3
    # one connection for all three where each body's end came with [DONE] or within the grace
    # (uvicorn writes the two apart); a body still open after it is not waited for longer:
    # its connection is closed and the next request opens one
    assert seen["conns"] == (3 if end_gap_s and end_gap_s > DONE_GRACE_S else 1)
    # every generator of the read was closed by the reader, none left to the loop
    assert [getattr(a, "__qualname__", a) for a in finalized] == []


async def test_bytes_that_come_while_the_reader_awaits_are_parsed_without_another_read():
    # the reader holds a piece and awaits something else (as the client does after [DONE]);
    # the next chunk comes meanwhile and then the server goes quiet: that chunk must come out
    # without waiting for more bytes (it waited for the next read, here 30 s away)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    reply = [head + _chunk(b"data: a\n\n"), 0.01, _chunk(b"data: b\n\n"), 30.0, b"0\r\n\r\n"]
    server, url, _ = await serve([reply])
    try:
        async with make_client(Timeouts(), api_key=None, concurrency=1) as client:
            async with client.stream("POST", url + "/generate", content=b"{}") as resp:
                pieces = resp.aiter_raw()
                assert await pieces.__anext__() == b"data: a\n\n"
                await asyncio.sleep(0.3)  # "b" is in the socket now
                # a liveness bound, not a speed figure: without the fix nothing comes for 30 s
                assert await asyncio.wait_for(pieces.__anext__(), 10.0) == b"data: b\n\n"
                await pieces.aclose()
    finally:
        server.close()
