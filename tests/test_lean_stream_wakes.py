"""A streaming body is read at most every stream_wake_s, with the kernel's arrival stamps."""

from __future__ import annotations

import asyncio
import time

import httpx

from tuiapp.common.lean_transport import LeanTransport

N_CHUNKS = 20
GAP_S = 0.005


async def _serve(before: list[float], after: list[float]):
    """A chunked stream; ``before``/``after`` bracket each chunk's write (the last: the end)."""
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(N_CHUNKS):
            body = b"data: %d\n\n" % i
            before.append(time.perf_counter())
            writer.write(b"%x\r\n%s\r\n" % (len(body), body))
            await writer.drain()
            after.append(time.perf_counter())
            await asyncio.sleep(GAP_S)
        before.append(time.perf_counter())
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        after.append(time.perf_counter())
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _read(wake_s: float, consumer_wake=None):
    """Read the stream; ``consumer_wake(index, stream_wake)`` may ask for other spacing."""
    before: list[float] = []
    after: list[float] = []
    server, url = await _serve(before, after)
    pieces = []
    async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=wake_s)) as client:
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            arrived = resp.extensions["arrived_s"]
            async for raw in resp.aiter_raw():
                pieces.append((arrived(), raw))
                if consumer_wake is not None:
                    consumer_wake(len(pieces), resp.extensions["stream_wake"])
        done_s = time.perf_counter()
    server.close()
    return pieces, before, after, done_s


def _body(pieces) -> bytes:
    return b"".join(raw for _, raw in pieces)


CLOCKS_S = 0.0005  # the kernel stamps on the wall clock; turned into perf_counter time here
EXPECTED = b"".join(b"data: %d\n\n" % i for i in range(N_CHUNKS))


async def test_spaced_reads_same_bytes_exact_stamps():
    pieces, before, after, done_s = await _read(0.05)
    assert _body(pieces) == EXPECTED
    assert len(pieces) <= N_CHUNKS // 3  # ~100 ms of chunks, read every 50 ms (+ the first)
    assert pieces[0][1] == b"data: 0\n\n"  # the first piece is not held back
    # a stamp is when the newest byte came in (the kernel's), not when it was read
    assert before[0] - CLOCKS_S <= pieces[0][0] < after[0] + 0.02
    # piece i holds chunk i or a later one: its stamp is not before chunk i was written
    assert all(before[i] - CLOCKS_S <= stamp for i, (stamp, _) in enumerate(pieces))
    # the last data chunk is read up to 50 ms late, but its stamp is its arrival
    assert before[N_CHUNKS - 1] - CLOCKS_S <= pieces[-1][0] <= after[-1] + 0.005
    assert done_s - after[-1] < 0.05 + 0.04


async def test_consumer_asks_for_every_read_near_the_end():
    """The benchmark knows how many tokens are due: near the end it reads at once again,
    so the end is seen when it comes and the next request is not held back."""
    def near_end(index: int, stream_wake) -> None:
        if index >= 2:
            stream_wake(0)

    pieces, before, after, done_s = await _read(0.05, near_end)
    assert _body(pieces) == EXPECTED
    assert len(pieces) >= N_CHUNKS * 0.6  # every read again once asked
    assert done_s - after[-1] < 0.04  # not the 0.5 s spacing


async def test_consumer_back_to_the_default():
    def immediate_then_default(index: int, stream_wake) -> None:
        stream_wake(0 if index < N_CHUNKS // 2 else None)

    pieces, *_ = await _read(0.05, immediate_then_default)
    assert _body(pieces) == EXPECTED
    assert N_CHUNKS // 2 <= len(pieces) < N_CHUNKS


async def test_no_spacing_reads_per_chunk():
    pieces, *_ = await _read(0.0)
    assert _body(pieces) == EXPECTED
    assert len(pieces) >= N_CHUNKS * 0.8  # loopback: about one read, and one piece, per chunk


async def test_a_big_read_comes_in_pieces_of_about_16_kib():
    """Half a second of SGLang's /generate (the text so far in every chunk) is ~100 KB."""
    chunk = b"data: " + b"x" * 2000 + b"\n\n"

    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))  # the first piece, read at once
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(60)) + b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    pieces = []
    async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=0.05)) as client:
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            done = resp.extensions["read_done"]
            async for raw in resp.aiter_raw():
                pieces.append((len(raw), done()))
    server.close()
    assert sum(n for n, _ in pieces) == 61 * len(chunk)
    assert max(n for n, _ in pieces) < 16 * 1024 + len(chunk)
    assert len(pieces) >= 61 * len(chunk) // (16 * 1024 + len(chunk))
    assert pieces[-1][1] and not all(d for _, d in pieces)  # only a read's last piece says so


async def test_default_spacing_reads_on_the_clock_grid():
    """The transport's own spacing reads at multiples of stream_wake_s on the loop's clock,
    where the samplers' and the log relay's ticks wake the loop anyway; a consumer's aimed
    spacing is not moved to the grid."""
    wake_s, gap_s, n = 0.2, 0.02, 40  # 0.8 s of chunks: three or four spaced reads
    loop = asyncio.get_running_loop()

    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(n):
            body = b"data: %d\n\n" % i
            writer.write(b"%x\r\n%s\r\n" % (len(body), body))
            await writer.drain()
            await asyncio.sleep(gap_s)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    read_at: list[float] = []
    async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=wake_s)) as client:
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            done = resp.extensions["read_done"]
            async for _raw in resp.aiter_raw():
                if done():
                    read_at.append(loop.time())
    server.close()
    # the first read comes at once, and so does the next (the spacing starts after it); the
    # last comes with the body's end
    spaced = read_at[2:-1]
    assert len(spaced) >= 2
    # each at (just after) a tick of the grid: the loop runs a timer at its time or a bit later
    late_s = [t - (t // wake_s) * wake_s for t in spaced]
    assert all(late < 0.05 for late in late_s), late_s



async def test_a_reader_that_breaks_off_leaves_no_spacing_on_the_kept_connection():
    """A reader of httpx's aiter_raw() that stops at the last data leaves the body's iterator
    open; the connection goes back to the pool all the same (the body's end came meanwhile),
    and its next response is read at once, not at the old stream's spacing."""
    async def handle(reader, writer):
        for _ in range(2):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"5\r\nlast\n\r\n")  # read at once, and the reads from here are spaced
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=30.0)) as client:
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            async for raw in resp.aiter_raw():
                if raw == b"last\n":
                    await asyncio.sleep(0.1)  # the body's end is in by the close
                    break
        async with client.stream("POST", url + "/generate", content=b"{}") as resp:
            # the kept connection's next reads are not left at the 30 s spacing
            first = await asyncio.wait_for(resp.aiter_raw().__anext__(), 2.0)
    server.close()
    assert first == b"first\n"
