"""A lean HTTP/1.1 transport for httpx: plain-http keep-alive straight on the loop's selector.

httpx's default stack (httpcore on anyio) pays per socket read for a timeout scope and a
pause/resume of the transport (an epoll unregister/register): ~100 us per SSE chunk,
which at 64 streams of one token per chunk is most of a core. Here each connection reads
its socket from the loop's selector into a buffer and wakes the one reader; chunked
framing is undone with bytes.find, and all complete chunks in the buffer come out as one
piece. Timeouts other than connect are the loop's watchdog's job. https and anything
unusual fall back to httpx's own transport.

Spaced reads. On this kind of machine (a VM) every wake-up of the process costs ~160 us of
CPU whatever it does: one 90 tok/s stream read chunk by chunk was 1.6% of a core on its
own. So once a chunked (streaming) body has delivered its first piece, the socket is read
at most every ``STREAM_WAKE_S`` (1 s): the connection leaves the selector and reads what
the kernel buffered meanwhile on a timer, at the next whole multiple of the spacing on the
loop's clock (the grid the samplers and the log relay tick on: one wake-up a second for all
of them and every stream); when a read finds nothing it goes back to the selector, so a
stream that pauses is picked up by its next byte. Arrival times stay exact:
the kernel stamps each segment as it arrives (``SO_TIMESTAMPNS``), a read reports the
newest stamp of what it took, and the response's ``arrived_s`` extension returns it on
the ``perf_counter`` clock. Where the kernel gives no stamps reads are never spaced.
The body's consumer can choose the spacing (``stream_wake`` extension): the benchmark reads
at once before its first token (TTFT is seen when it comes) and aims one read at the end it
expects, so the end is seen at once and the next request is not held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator

import httpx

from tuiapp.common.http1_head import parse_head
from tuiapp.common.net_errors import cause
from tuiapp.common.stamped_conn import LAST_CHUNK, Conn, open_conn

_MAX_HEAD_BYTES = 64 * 1024
# Nothing is shown of a stream before it ends (its times come from the stamps), and the
# dashboard's frames are 1 s apart: 1 s reads halve a 3 s stream's wake-ups against 0.5 s.
STREAM_WAKE_S = 1.0
# RFC 9112's chunk-size [chunk-ext] with h11's bounds (20 hex digits, trailing blanks)
_CHUNK_HEAD = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\r\n]*)?[ \t]*")
_TRAILER = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*")  # a chunked body's end (trailers aside): wake at once
_PIECE_BYTES = 16 * 1024


def take_back_cancel(task: asyncio.Task) -> None:
    """After catching a CancelledError that our own timer caused: Python 3.11+ counts a task's
    pending cancels (asyncio.timeout and TaskGroup read the count), so the one we made is
    taken back; the caller's own cancels stay counted. 3.10 keeps no count."""
    undo = getattr(task, "uncancel", None)
    if undo is not None:
        undo()


async def _within(coro, timeout_s: float | None):
    """``await coro`` in this task, cancelled past ``timeout_s`` (TimeoutError then).

    ``asyncio.wait_for`` runs the coroutine as a task of its own and wakes the caller through
    a waiter: two more loop passes and a task per request, on every poll and every benchmark
    request (Python 3.11's ``asyncio.timeout`` does it this way; 3.10 has none)."""
    if timeout_s is None:
        return await coro
    task = asyncio.current_task()
    assert task is not None
    expired: list[bool] = []

    def expire() -> None:
        expired.append(True)
        task.cancel()

    handle = asyncio.get_running_loop().call_later(timeout_s, expire)
    try:
        return await coro
    except asyncio.CancelledError:
        if not expired:
            raise
        take_back_cancel(task)
        # Our timer and someone else's cancel can land in one pass of the loop: the task then
        # sees one CancelledError for both, and turning it into a timeout would lose theirs
        # (a helper told to stop would run on, and whoever awaits it would wait for ever).
        if getattr(task, "cancelling", lambda: 0)():
            raise
        raise asyncio.TimeoutError from None
    finally:
        handle.cancel()


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: LeanTransport, key: tuple[str, int], conn: Conn, length: int | None,
                 chunked: bool, keep: bool, read_s: float | None = None) -> None:
        self._t, self._key, self._conn = transport, key, conn
        self._length, self._chunked, self._keep = length, chunked, keep
        self._complete = False
        # httpx's read timeout, over the body too: a body that stalls after its head ends in
        # ReadTimeout. One timer per read_s, not one per read: it looks whether any read came.
        self._read_s = read_s
        self._watch: asyncio.TimerHandle | None = None
        self._seen = 0
        if read_s:
            self._watch_from_now()
        self._wake_s: float | None = None  # the consumer's choice (stream_wake); None: the transport's
        self._spaced = False  # the first piece has gone: reads may be spaced
        self.read_done = True  # the piece just yielded is the last of its read
        self._released = False  # the connection went back to the pool

    def _watch_from_now(self) -> None:
        self._seen = self._conn.reads
        self._watch = self._conn.loop.call_later(self._read_s, self._check)

    def _check(self) -> None:
        self._watch = None
        conn = self._conn
        if self._complete or self._released or conn.closed:
            return
        if conn.reads == self._seen and conn._recv():  # spaced reads may not have looked yet
            conn._after_read()
        if conn.closed and not conn.timed_out:
            return
        if conn.reads != self._seen:
            self._watch_from_now()
            return
        host, port = self._key
        conn.timed_out = f"{host}:{port}: no response bytes for {self._read_s:g} s"
        conn.close()

    def _unwatch(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def wake(self, wake_s: float | None) -> None:
        """Read this stream at most every ``wake_s`` (0: at once; None: the transport's default)."""
        self._wake_s = wake_s
        if self._spaced:
            # the transport's own spacing sits on the clock grid; a consumer's is aimed (at an end)
            self._conn.set_defer(self._t.stream_wake_s if wake_s is None else wake_s, on_grid=wake_s is None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if self._chunked:
            try:
                # closed with this one (a reader that stops early closes us): an async generator
                # left suspended is closed by the loop later, through a task and a self-pipe wake
                async with contextlib.aclosing(self._dechunk(conn)) as pieces:
                    async for piece in pieces:
                        yield piece
                        if not self._spaced:  # the first piece went at once; from here on reads are spaced
                            self._spaced = True
                            self.wake(self._wake_s)
            finally:
                self._spaced = False
                if not self._released:
                    conn.set_defer(0.0)
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
                if conn.buf:  # came while the reader held the last piece (it awaited)
                    continue
                try:
                    await conn.more()
                except httpx.RemoteProtocolError:
                    break
            self._keep = False
        self._complete = True
        self._unwatch()

    async def _dechunk(self, conn: Conn) -> AsyncIterator[bytes]:
        buf = conn.buf
        while True:
            reads = conn.reads
            out = []
            pos = 0
            done = False
            line_pending = False  # waiting for the rest of a chunk size line
            bad = ""  # the framing broke here: what came before it still goes out first
            while True:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    line_pending = True
                    break
                line = bytes(buf[pos:eol])
                # The common case, plain hex, for int() alone: letters and digits only leave int()
                # nothing to accept but hex digits (no sign, blank, "_") once "0x" is ruled out.
                if line.isalnum() and len(line) <= 20 and (line[0] != 48 or line[1:2] not in (b"x", b"X")):
                    try:
                        size = int(line, 16)
                    except ValueError:
                        bad = f"bad chunk size line {line[:40]!r}"
                        break
                else:
                    head = _CHUNK_HEAD.fullmatch(line)
                    if head is None:
                        bad = f"bad chunk size line {line[:40]!r}"
                        break
                    size = int(head[1], 16)
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
                        for line in bytes(buf[start : end - 2]).split(b"\r\n"):
                            if not _TRAILER.fullmatch(line):
                                bad = f"bad trailer line {line[:40]!r}"
                                break
                        if bad:
                            break
                    pos = end + 2
                    done = True
                    # all of the body is off the socket: the connection may serve the next
                    # request even when the reader stops at its last data (SSE's [DONE])
                    self._complete = True
                    break
                if len(buf) < start + size + 2:
                    break
                if buf[start + size] != 13 or buf[start + size + 1] != 10:  # CRLF
                    bad = f"chunk of {size} bytes not followed by CRLF"
                    break
                out.append(bytes(buf[start : start + size]))
                pos = start + size + 2
            if pos:
                del buf[:pos]
            # A spaced read can hold half a second of a stream (SGLang's /generate repeats the
            # text so far in every chunk: ~100 KB). Pieces of at most ~16 KB keep each
            # allocation small: big short-lived blocks fragment the heap of a long job.
            group: list[bytes] = []
            group_bytes = 0
            for i, chunk in enumerate(out):
                group.append(chunk)
                group_bytes += len(chunk)
                if group_bytes >= _PIECE_BYTES or i == len(out) - 1:
                    self.read_done = i == len(out) - 1
                    yield group[0] if len(group) == 1 else b"".join(group)
                    group, group_bytes = [], 0
            self.read_done = True
            if bad:
                raise httpx.RemoteProtocolError(bad)
            if done:
                return
            if line_pending and len(buf) > _MAX_HEAD_BYTES:
                raise httpx.RemoteProtocolError("chunk size line too long")
            if conn.reads != reads:
                # bytes came while the reader held the pieces (it awaited something, e.g. a
                # body's end after [DONE]): parse them now, not after the next read
                continue
            await conn.more()

    async def aclose(self) -> None:
        self._unwatch()
        conn = self._conn
        if not self._complete and self._chunked and not conn.closed:
            # The reader stopped at the body's last data (SSE's [DONE]) before its end was
            # parsed: the end may have come since (a server writes the two apart). Then the
            # connection is kept: a new one per request costs a connect's wake-up.
            conn._recv()
            if conn.buf == LAST_CHUNK:
                conn.buf.clear()
                self._complete = True
        if self._complete and self._keep and not conn.closed and not conn.buf:
            # A reader that stopped early may leave our iterator open (httpx's aiter_raw): its
            # spacing goes now, and a late close of it must not touch the connection's next use.
            conn.set_defer(0.0)
            self._released = True
            self._t._release(self._key, conn)
        else:
            conn.close()


def _header_lines(raw: list[tuple[bytes, bytes]], host: str, port: int) -> list[bytes]:
    """A request's header lines but its framing (length, encoding, connection: ours), with a
    host line where it has none."""
    lines = []
    has_host = False
    for name, value in raw:
        low = name.lower()
        if low == b"host":
            has_host = True
        if low in (b"transfer-encoding", b"content-length", b"connection"):
            continue
        lines.append(name + b": " + value + b"\r\n")
    if not has_host:
        lines.append(f"host: {host}:{port}\r\n".encode())
    return lines


class LeanTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, connect_timeout_s: float = 5.0, max_idle: int = 256,
                 limits: httpx.Limits | None = None, stream_wake_s: float = STREAM_WAKE_S) -> None:
        """``limits`` is for the httpx fallback (httpx ignores a client's own limits when
        it is given a transport): its default of 100 connections would queue requests of a
        larger concurrency inside their measured TTFT. ``stream_wake_s``: 0 wakes the
        reader on every read (for polls, where a body is not a stream)."""
        from tuiapp.common.routed_transport import RoutedAsyncTransport

        self.stream_wake_s = stream_wake_s
        self._connect_timeout_s = connect_timeout_s
        self._max_idle = max_idle
        self._idle: dict[tuple[str, int], list[Conn]] = {}
        # https and whatever a proxy carries: httpx's own transports (common/net_config.py)
        self.routed = RoutedAsyncTransport(limits=limits)

    def is_lean(self, url: httpx.URL) -> bool:
        """Whether this transport serves ``url`` itself (plain http, no proxy)."""
        return url.scheme == "http" and self.routed.proxy_for(url) is None

    def _release(self, key: tuple[str, int], conn: Conn) -> None:
        pool = self._idle.setdefault(key, [])
        if len(pool) < self._max_idle:
            pool.append(conn)
        else:
            conn.close()

    async def _connect(self, host: str, port: int) -> Conn:
        try:
            return await asyncio.wait_for(open_conn(host, port), self._connect_timeout_s)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(
                f"{host}:{port}: connect timed out after {self._connect_timeout_s:g} s") from None
        except OSError as exc:
            raise httpx.ConnectError(f"{host}:{port}: {cause(exc)}") from exc

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if not self.is_lean(url):
            return await self.routed.handle_async_request(request)
        host, port = url.host, url.port or 80
        body = await request.aread()
        head = [f"{request.method} {url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode(),
                *_header_lines(request.headers.raw, host, port)]
        head.append(b"content-length: %d\r\n\r\n" % len(body))
        # a caller that bounds the whole response itself (PollClient) needs no timers here
        read_s = (None if "deadline_outside" in request.extensions
                  else (request.extensions.get("timeout") or {}).get("read"))
        resp, sent_s = await self._exchange(host, port, b"".join(head) + body, request.method, read_s)
        # when the bytes left: TTFT counts from here, not from before the client built them
        request.extensions["sent_s"] = sent_s
        return resp

    def post_head(self, url: httpx.URL, headers: httpx.Headers) -> bytes | None:
        """The part of a POST's head to ``url`` that is the same for every request (all of
        it but the length), for ``post``; None when this transport does not serve ``url``
        itself (then the caller goes through httpx)."""
        if not self.is_lean(url):
            return None
        host, port = url.host, url.port or 80
        return b"".join([f"POST {url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode(),
                         *_header_lines(headers.raw, host, port)])

    async def post(self, url: httpx.URL, head: bytes, body: bytes) -> tuple[httpx.Response, float]:
        """POST ``body`` with a head from ``post_head``, without building an httpx request:
        the benchmark's closed loop sends a burst of requests at once when a batch ends
        together, and httpx's per-request work (~70 us each here) spread such a burst over
        milliseconds, which the server saw and a leaner client does not make. No read
        deadline here: the benchmark's watchdog bounds head and body (first token, stall),
        and two timers more a request cost a burst's sends too. Returns the response (its
        body a stream) and when the request's bytes left."""
        data = b"%scontent-length: %d\r\n\r\n%s" % (head, len(body), body)
        return await self._exchange(url.host, url.port or 80, data, "POST", None)

    async def _exchange(self, host: str, port: int, data: bytes, method: str,
                        read_s: float | None) -> tuple[httpx.Response, float]:
        key = (host, port)
        pool = self._idle.get(key)
        while True:
            reused = bool(pool)
            conn = pool.pop() if pool else await self._connect(host, port)
            if conn.closed:
                continue
            sent_s = time.perf_counter()
            try:
                await conn.send(data)
                return await _within(self._response(key, conn, method, read_s), read_s), sent_s
            except asyncio.TimeoutError:
                conn.close()
                raise httpx.ReadTimeout(f"{host}:{port}: no response head within {read_s:g} s") from None
            except httpx.RemoteProtocolError:
                conn.close()
                if not reused:
                    raise
                # a keep-alive connection the server had closed: retry once on a fresh one
                pool = None

    async def _response(self, key: tuple[str, int], conn: Conn, method: str,
                        read_s: float | None) -> httpx.Response:
        buf = conn.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(buf) > _MAX_HEAD_BYTES:
                conn.close()
                raise httpx.RemoteProtocolError("response head too large")
            await conn.more()
        raw = bytes(buf[:end])
        del buf[: end + 4]
        try:
            status_code, headers, length, chunked, keep = parse_head(raw)
        except httpx.RemoteProtocolError:
            conn.close()
            raise
        if method == "HEAD" or status_code in (204, 304):
            length, chunked = 0, False
        body = _Body(self, key, conn, length, chunked, keep, read_s)
        return httpx.Response(
            status_code,
            headers=headers,
            stream=body,
            # arrived_s(): perf_counter when the newest byte read so far came in (the module doc);
            # stream_wake(s): how often to read this body (see _Body.wake)
            # read_done(): whether the piece just yielded was the last of its read
            # raw_pieces(): the body's own iterator of what aiter_raw() yields, for a reader
            # that may stop early and closes it (httpx's wrapping generators cannot be closed
            # from outside: each one left suspended costs the loop a task and a wake-up)
            extensions={"http_version": b"HTTP/1.1", "arrived_s": lambda: conn.arrived_s,
                        "stream_wake": body.wake, "read_done": lambda: body.read_done,
                        "raw_pieces": body.__aiter__},
        )

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()
        await self.routed.aclose()
