"""A lean HTTP/1.1 transport for httpx: plain-http keep-alive over asyncio protocols.

httpx's default stack (httpcore on anyio) pays per socket read for a timeout scope and a
pause/resume of the transport (an epoll unregister/register): ~100 us per SSE chunk,
which at 64 streams of one token per chunk is most of a core. Here a protocol appends
to a buffer and wakes the one reader; chunked framing is undone with bytes.find, and all
complete chunks in the buffer come out as one piece. Timeouts other than connect are
the loop's watchdog's job. https and anything unusual fall back to httpx's own transport.

Once a chunked (streaming) body has delivered its first piece, the reader is woken at
most every ``STREAM_WAKE_S`` (and at once for the body's last chunk) instead of once per
chunk: waking a task through the stream's generators is most of a chunk's cost, and at
one token per chunk that was ~1.7% of a core for a single 90 tok/s stream. Arrival
times stay exact: the protocol stamps each read (``perf_counter``), and the response's
``arrived_s`` extension returns the stamp of the latest read, the time the newest byte
of each piece came in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx

_MAX_HEAD_BYTES = 64 * 1024
STREAM_WAKE_S = 0.05
_LAST_CHUNK = b"0\r\n\r\n"  # a chunked body's end (trailers aside): wake at once
_READ_BYTES = 64 * 1024


class _Conn(asyncio.BufferedProtocol):
    # Buffered: the socket is read into one buffer per connection. A plain Protocol gets a new
    # bytes object per read that asyncio allocates at 256 KiB and shrinks to the chunk (a few
    # hundred bytes of SSE); over hours those allocations fragment the heap and RSS creeps up.
    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.arrived_s = 0.0  # perf_counter of the latest read
        self.defer_s = 0.0  # > 0 while a body streams: wake the reader at most this often
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._read = memoryview(bytearray(_READ_BYTES))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._read[:nbytes])

    # protocol callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes | memoryview) -> None:
        self.buf += data
        self.arrived_s = time.perf_counter()
        w = self._waiter
        if w is None or w.done():
            return
        if self.defer_s and not self.buf.endswith(_LAST_CHUNK):
            if self._timer is None:
                self._timer = w.get_loop().call_later(self.defer_s, self._wake)
            return
        self._wake()

    def _wake(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def eof_received(self) -> bool:
        self._lost()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost()

    def _lost(self) -> None:
        self.closed = True
        self._wake()

    async def more(self) -> None:
        """Wait until more bytes arrive; raises RemoteProtocolError at EOF."""
        if self.closed:
            raise httpx.RemoteProtocolError("server closed the connection")
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.closed and not self.buf:
            raise httpx.RemoteProtocolError("server closed the connection")

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: LeanTransport, key: tuple[str, int], conn: _Conn, length: int | None, chunked: bool, keep: bool) -> None:
        self._t, self._key, self._conn = transport, key, conn
        self._length, self._chunked, self._keep = length, chunked, keep
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if self._chunked:
            try:
                async for piece in self._dechunk(conn):
                    yield piece
                    conn.defer_s = self._t.stream_wake_s  # the first piece went at once
            finally:
                conn.defer_s = 0.0
        elif self._length is not None:
            left = self._length
            while left > 0:
                if not conn.buf:
                    await conn.more()
                take = bytes(conn.buf[:left])
                del conn.buf[: len(take)]
                left -= len(take)
                yield take
        else:  # body until close
            while True:
                if conn.buf:
                    data = bytes(conn.buf)
                    conn.buf.clear()
                    yield data
                if conn.closed:
                    break
                try:
                    await conn.more()
                except httpx.RemoteProtocolError:
                    break
            self._keep = False
        self._complete = True

    async def _dechunk(self, conn: _Conn) -> AsyncIterator[bytes]:
        buf = conn.buf
        while True:
            out = []
            pos = 0
            done = False
            while True:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
                start = eol + 2
                if size == 0:
                    end = buf.find(b"\r\n", start)  # trailers end with an empty line
                    if end != start:
                        if end < 0:
                            break
                        end = buf.find(b"\r\n\r\n", start)
                        if end < 0:
                            break
                        end += 2
                    pos = end + 2
                    done = True
                    break
                if len(buf) < start + size + 2:
                    break
                out.append(bytes(buf[start : start + size]))
                pos = start + size + 2
            if pos:
                del buf[:pos]
            if out:
                yield b"".join(out)
            if done:
                return
            await conn.more()

    async def aclose(self) -> None:
        conn = self._conn
        if self._complete and self._keep and not conn.closed and not conn.buf:
            self._t._release(self._key, conn)
        else:
            conn.close()


class LeanTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, connect_timeout_s: float = 5.0, max_idle: int = 256,
                 limits: httpx.Limits | None = None, stream_wake_s: float = STREAM_WAKE_S) -> None:
        """``limits`` is for the https fallback (httpx ignores a client's own limits when
        it is given a transport): its default of 100 connections would queue requests of a
        larger concurrency inside their measured TTFT. ``stream_wake_s``: 0 wakes the
        reader on every read (for polls, where a body is not a stream)."""
        self.stream_wake_s = stream_wake_s
        self._connect_timeout_s = connect_timeout_s
        self._max_idle = max_idle
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._limits = limits
        self._fallback: httpx.AsyncHTTPTransport | None = None  # built on first https use: its SSL context costs ~20 ms

    def https_transport(self) -> httpx.AsyncHTTPTransport:
        """httpx's own transport, for https (built on first use, with the shared SSL context)."""
        if self._fallback is None:
            from tuiapp.common.http_clients import tls_context

            self._fallback = httpx.AsyncHTTPTransport(verify=tls_context(), limits=self._limits or httpx.Limits())
        return self._fallback

    def _release(self, key: tuple[str, int], conn: _Conn) -> None:
        pool = self._idle.setdefault(key, [])
        if len(pool) < self._max_idle:
            pool.append(conn)
        else:
            conn.close()

    async def _connect(self, host: str, port: int) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(loop.create_connection(_Conn, host, port), self._connect_timeout_s)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return conn

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            return await self.https_transport().handle_async_request(request)
        host, port = url.host, url.port or 80
        key = (host, port)
        body = await request.aread()
        head = [f"{request.method} {url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode()]
        has_host = False
        for name, value in request.headers.raw:
            low = name.lower()
            if low == b"host":
                has_host = True
            if low in (b"transfer-encoding", b"content-length", b"connection"):
                continue
            head.append(name + b": " + value + b"\r\n")
        if not has_host:
            head.append(f"host: {host}:{port}\r\n".encode())
        head.append(b"content-length: %d\r\n\r\n" % len(body))
        data = b"".join(head) + body
        pool = self._idle.get(key)
        while True:
            reused = bool(pool)
            conn = pool.pop() if pool else await self._connect(host, port)
            if conn.closed:
                continue
            # when the bytes leave: TTFT counts from here, not from before the client built them
            request.extensions["sent_s"] = time.perf_counter()
            conn.transport.write(data)  # type: ignore[union-attr]
            read_s = (request.extensions.get("timeout") or {}).get("read")
            try:
                return await asyncio.wait_for(self._response(key, conn, request), read_s)
            except asyncio.TimeoutError:
                conn.close()
                raise httpx.ReadTimeout("no response head in time") from None
            except httpx.RemoteProtocolError:
                conn.close()
                if not reused:
                    raise
                # a keep-alive connection the server had closed: retry once on a fresh one
                pool = None

    async def _response(self, key: tuple[str, int], conn: _Conn, request: httpx.Request) -> httpx.Response:
        buf = conn.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(buf) > _MAX_HEAD_BYTES:
                conn.close()
                raise httpx.RemoteProtocolError("response head too large")
            await conn.more()
        lines = bytes(buf[:end]).split(b"\r\n")
        del buf[: end + 4]
        try:
            version, status, *_ = lines[0].split(b" ", 2)
            status_code = int(status)
        except ValueError:
            conn.close()
            raise httpx.RemoteProtocolError(f"bad status line {lines[0][:80]!r}") from None
        headers = []
        length = None
        chunked = False
        keep = version == b"HTTP/1.1"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip(), value.strip()
            headers.append((name, value))
            low = name.lower()
            if low == b"content-length":
                length = int(value)
            elif low == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif low == b"connection":
                keep = value.lower() != b"close" if keep else value.lower() == b"keep-alive"
        if request.method == "HEAD" or status_code in (204, 304):
            length, chunked = 0, False
        return httpx.Response(
            status_code,
            headers=headers,
            stream=_Body(self, key, conn, length, chunked, keep),
            # arrived_s(): perf_counter of the connection's latest read (see the module doc)
            extensions={"http_version": b"HTTP/1.1", "arrived_s": lambda: conn.arrived_s},
        )

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.aclose()
