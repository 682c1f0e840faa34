"""A streaming body wakes its reader at most every stream_wake_s, with exact arrival stamps."""

from __future__ import annotations

import asyncio
import time

import httpx

from tuiapp.common.lean_transport import LeanTransport

N_CHUNKS = 20
GAP_S = 0.005


async def _serve(stamps: list[float]):
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(N_CHUNKS):
            body = b"data: %d\n\n" % i
            writer.write(b"%x\r\n%s\r\n" % (len(body), body))
            await writer.drain()
            stamps.append(time.perf_counter())
            await asyncio.sleep(GAP_S)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        stamps.append(time.perf_counter())
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _read(wake_s: float) -> tuple[list[tuple[float, bytes]], list[float], float]:
    sent: list[float] = []
    server, url = await _serve(sent)
    pieces = []
    async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=wake_s)) as client:
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            arrived = resp.extensions["arrived_s"]
            async for raw in resp.aiter_raw():
                pieces.append((arrived(), raw))
        done_s = time.perf_counter()
    server.close()
    return pieces, sent, done_s


async def test_fewer_wakes_same_bytes_exact_first_and_last():
    pieces, sent, done_s = await _read(0.05)
    body = b"".join(raw for _, raw in pieces)
    assert body == b"".join(b"data: %d\n\n" % i for i in range(N_CHUNKS))
    assert len(pieces) <= N_CHUNKS // 3  # ~100 ms of chunks, woken every 50 ms (+ the first)
    assert pieces[0][1] == b"data: 0\n\n"  # the first piece is not held back
    # stamps are reads, not wake-ups: never before the write, and the first within a few ms
    assert sent[0] <= pieces[0][0] < sent[0] + 0.02
    # piece i holds chunk i or a later one: its stamp is not before chunk i was written
    assert all(sent[i] <= stamp for i, (stamp, _) in enumerate(pieces))
    # the last chunk's stamp is its own read, and the body's end is not held for 50 ms
    assert sent[N_CHUNKS - 1] <= pieces[-1][0] <= sent[-1] + 0.01
    assert done_s - sent[-1] < 0.04


async def test_no_coalescing_wakes_per_chunk():
    pieces, _sent, _done = await _read(0.0)
    assert len(pieces) >= N_CHUNKS * 0.8  # loopback: about one read, and one piece, per chunk
