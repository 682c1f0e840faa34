"""The lean transport's edges: a deadline over the body too, framing errors as httpx's, errors
naming the host and the cause, and its chunked parser against h11 on generated bodies."""

from __future__ import annotations

import asyncio
import random
import socket
import ssl

import h11
import httpx
import pytest

from tuiapp.common.http_clients import async_client
from tuiapp.common.lean_transport import LeanTransport, _Body
from tuiapp.common.net_errors import cause


async def _serve(reply: bytes, *, then_stall: bool = False, trickle_s: float | None = None):
    """A server that answers every request with ``reply`` (then holds the connection open,
    or, with ``trickle_s``, sends its body one byte per ``trickle_s``)."""
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            if trickle_s is None:
                writer.write(reply)
            else:  # the head at once, the body byte by byte
                head_end = reply.index(b"\r\n\r\n") + 4
                writer.write(reply[:head_end])
                for i in range(head_end, len(reply)):
                    writer.write(reply[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(trickle_s)
            await writer.drain()
            if then_stall:
                await release.wait()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client gave up, or the test is over
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, release, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/x"


async def _stop(server, release) -> None:
    release.set()
    server.close()
    await server.wait_closed()


@pytest.mark.parametrize("body", [
    b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n",
])
async def test_a_body_that_stalls_after_its_head_times_out(body):
    server, release, url = await _serve(body, then_stall=True)
    try:
        async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=0.0)) as client:
            with pytest.raises(httpx.ReadTimeout, match=r"^127\.0\.0\.1:\d+: no response bytes for 0\.3 s"):
                await client.get(url, timeout=httpx.Timeout(5.0, read=0.3))
    finally:
        await _stop(server, release)


async def test_a_stream_that_keeps_coming_is_not_cut_by_the_read_timeout():
    reply = b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nabcdef"
    server, release, url = await _serve(reply, trickle_s=0.05)  # ~2.5 s of read timeouts in all
    try:
        async with httpx.AsyncClient(transport=LeanTransport(stream_wake_s=0.0)) as client:
            resp = await client.get(url, timeout=httpx.Timeout(5.0, read=0.2))
        assert resp.content == b"abcdef"
    finally:
        await _stop(server, release)


async def test_a_poll_has_one_deadline_over_its_whole_response():
    # each byte within the read timeout, the whole well past it: a poll gives up at the deadline
    reply = b"HTTP/1.1 200 OK\r\ncontent-length: 40\r\n\r\n" + b"x" * 40
    server, release, url = await _serve(reply, trickle_s=0.05)
    try:
        async with async_client(url, timeout=httpx.Timeout(0.5)) as client:
            with pytest.raises(httpx.ReadTimeout, match=r"no whole response within 0\.5 s"):
                await client.get(url)
    finally:
        await _stop(server, release)


@pytest.mark.parametrize("head", [
    b"content-length: abc", b"content-length: -1", b"content-length: +5", b"content-length: 5, 6",
    b"content-length: 0x5", b"content-length:",
])
async def test_malformed_content_length_is_a_protocol_error(head):
    server, release, url = await _serve(b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\nhello")
    try:
        async with httpx.AsyncClient(transport=LeanTransport()) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="Content-Length"):
                await client.get(url)
    finally:
        await _stop(server, release)


@pytest.mark.parametrize("chunks", [b"zz\r\nabc\r\n0\r\n\r\n", b"-3\r\nabc\r\n0\r\n\r\n", b"0x3\r\nabc\r\n0\r\n\r\n",
                                    b"3\r\nabcdef\r\n0\r\n\r\n", b"+3\r\nabc\r\n0\r\n\r\n", b"3_0\r\nabc\r\n"])
async def test_bad_chunks_are_a_protocol_error(chunks):
    server, release, url = await _serve(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunks)
    try:
        async with httpx.AsyncClient(transport=LeanTransport()) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="chunk"):
                await client.get(url)
    finally:
        await _stop(server, release)


async def test_connect_errors_name_the_host_and_cause():
    async with httpx.AsyncClient(transport=LeanTransport(connect_timeout_s=5.0)) as client:
        with pytest.raises(httpx.ConnectError, match=r"^127\.0\.0\.1:1: Connection refused$"):
            await client.get("http://127.0.0.1:1/")
        with pytest.raises(httpx.ConnectError, match=r"^no-such-host\.invalid:80: name resolution failed: "):
            await client.get("http://no-such-host.invalid/")


def _chained(top: BaseException, inner: BaseException) -> BaseException:
    top.__cause__ = inner
    return top


@pytest.mark.parametrize(("exc", "said"), [
    (_chained(httpx.ConnectError("x"), socket.gaierror(-2, "Name or service not known")),
     "name resolution failed: Name or service not known"),
    (_chained(httpx.ConnectError("[Errno 1] x"), ssl.SSLCertVerificationError(1, "x")),
     "certificate not trusted: "),
    (httpx.ConnectTimeout("x"), "connect timed out"),
    (_chained(httpx.ConnectError("x"), ConnectionRefusedError(111, "Connection refused")), "Connection refused"),
    (httpx.ReadTimeout("x"), "timed out (ReadTimeout)"),
])
def test_cause_words(exc, said):
    text = cause(exc)
    assert text.startswith(said)
    assert "Operation not permitted" not in text and "Unknown error" not in text


# --- the chunked parser against h11 -------------------------------------------------------

class _FedConn:
    """A connection whose bytes come in the given splits (what the parser sees of a socket)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.buf = bytearray()
        self.closed = False
        self.reads = 0  # reads that brought bytes, as _Conn counts them
        self._pieces = list(pieces)

    async def more(self) -> None:
        if not self._pieces:
            self.closed = True
            raise httpx.RemoteProtocolError("server closed the connection")
        self.buf += self._pieces.pop(0)
        self.reads += 1

    def set_defer(self, *_a, **_k) -> None:
        pass


def _lean_parse(wire: bytes, rng: random.Random) -> tuple[bytes, bool]:
    cuts = sorted(rng.sample(range(1, len(wire)), min(len(wire) - 1, rng.randint(0, 12)))) if len(wire) > 1 else []
    pieces = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    conn = _FedConn(pieces)
    body = _Body(None, ("h", 80), conn, None, True, False)  # type: ignore[arg-type]

    async def run() -> tuple[bytes, bool]:
        out = b""
        try:
            async for piece in body._dechunk(conn):  # type: ignore[arg-type]
                out += piece
        except httpx.RemoteProtocolError:
            return out, False
        return out, True

    return asyncio.run(run())


def _h11_parse(wire: bytes) -> tuple[bytes, bool]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "h")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + wire)
    conn.receive_data(b"")
    out = b""
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                out += event.data
            elif isinstance(event, h11.EndOfMessage):
                return out, True
            elif event is h11.NEED_DATA or event is h11.PAUSED:
                return out, False
    except h11.RemoteProtocolError:
        return out, False


def _random_body(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.randint(0, 8)):
        data = rng.randbytes(rng.choice([1, 2, 15, 16, 255, 1000, 20000]))
        size = format(len(data), rng.choice(["x", "X", "04x"]))
        ext = rng.choice(["", "", ";name=value", ";a;b=c"])
        blank = rng.choice(["", "", " ", "\t"])
        parts.append(f"{size}{ext}{blank}\r\n".encode() + data + b"\r\n")
    trailer = rng.choice([b"", b"", b"x-trailer: 1\r\n", b"a: b\r\nc: d\r\n"])
    parts.append(b"0\r\n" + trailer + b"\r\n")
    return b"".join(parts)


def _mutate(wire: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    at = rng.randrange(len(wire))
    if kind == 0:  # a byte changed
        return wire[:at] + bytes([rng.choice(b"0123456789abcdefgxz-+ ;\r\n")]) + wire[at + 1:]
    if kind == 1:  # a byte dropped
        return wire[:at] + wire[at + 1:]
    if kind == 2:  # cut short
        return wire[:at]
    return wire[:at] + rng.choice([b"\r\n", b"-", b"0x", b"zz"]) + wire[at:]


def test_dechunk_agrees_with_h11_on_generated_bodies():
    rng = random.Random(20261204)
    for _ in range(300):
        wire = _random_body(rng)
        assert _lean_parse(wire, rng) == _h11_parse(wire) == (_h11_parse(wire)[0], True)


def test_dechunk_never_accepts_what_h11_refuses():
    rng = random.Random(33)
    checked = refused = 0
    for _ in range(600):
        wire = _mutate(_random_body(rng), rng)
        if not wire:
            continue
        lean_data, lean_ok = _lean_parse(wire, rng)  # raises nothing but RemoteProtocolError
        h11_data, h11_ok = _h11_parse(wire)
        if lean_ok:
            assert h11_ok and lean_data == h11_data, wire[:200]
        refused += not h11_ok
        checked += 1
    assert checked > 500 and refused > 100  # the mutations do break framing, often
