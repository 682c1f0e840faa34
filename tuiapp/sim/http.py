"""A small HTTP/1.1 server on asyncio Protocols: keep-alive, Content-Length bodies, chunked
streaming responses. Just enough for SGLang's API and fast enough that it is never the
bottleneck (one ``transport.write`` per streamed chunk, no per-chunk task or queue).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from urllib.parse import parse_qsl, urlsplit

MAX_HEADER_BYTES = 64 * 1024


class Request:
    __slots__ = ("method", "path", "query", "headers", "body", "client", "target")

    def __init__(self, method, target, headers, body, client):
        self.method = method
        self.target = target
        parts = urlsplit(target)
        self.path = parts.path
        self.query = dict(parse_qsl(parts.query))
        self.headers = headers
        self.body = body
        self.client = client


def phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class Connection(asyncio.Protocol):
    """One client connection; requests on it are handled one at a time, in order."""

    def __init__(self, handler: Callable[[Request, Connection], Awaitable[None]]):
        self.handler = handler
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False
        self.closed = False
        self.keep_alive = True
        self.client = "127.0.0.1:0"
        self.on_close: list[Callable[[], None]] = []

    # ------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport):
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if peer:
            self.client = f"{peer[0]}:{peer[1]}"

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._next()

    def connection_lost(self, exc) -> None:
        self.closed = True
        callbacks, self.on_close = self.on_close, []
        for cb in callbacks:
            cb()

    # ------------------------------------------------------------ parsing
    def _next(self) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > MAX_HEADER_BYTES:
                self.transport.close()
            return
        head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, version = head[0].split(" ", 2)
        except ValueError:
            self.transport.close()
            return
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        raw_length = headers.get("content-length", "0") or "0"
        if not raw_length.isdigit():  # uvicorn drops such a request too; never a traceback
            self.transport.close()
            return
        length = int(raw_length)
        if len(self.buf) < end + 4 + length:
            return
        body = bytes(self.buf[end + 4 : end + 4 + length])
        del self.buf[: end + 4 + length]
        conn_hdr = headers.get("connection", "").lower()
        self.keep_alive = conn_hdr != "close" and (version != "HTTP/1.0" or conn_hdr == "keep-alive")
        self.busy = True
        asyncio.get_running_loop().create_task(self._handle(Request(method, target, headers, body, self.client)))

    async def _handle(self, req: Request) -> None:
        try:
            await self.handler(req, self)
        except Exception as exc:  # noqa: BLE001 - a handler bug must not kill the server
            if not self.closed:
                self.respond(500, f"Internal Server Error: {exc!r}".encode(), "text/plain")
        self._done()

    def _done(self) -> None:
        self.busy = False
        if self.closed:
            return
        if not self.keep_alive:
            self.transport.close()
            return
        if self.buf:
            self._next()

    # ------------------------------------------------------------ writing
    def _head(self, status: int, headers: list[tuple[str, str]]) -> bytes:
        lines = [f"HTTP/1.1 {status} {phrase(status)}", "server: uvicorn"]
        lines += [f"{k}: {v}" for k, v in headers]
        if not self.keep_alive:
            lines.append("connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def respond(self, status: int, body: bytes, content_type: str | None = "application/json", extra=()) -> None:
        if self.closed:
            return
        headers = [("content-length", str(len(body))), *extra]
        if content_type is not None:
            headers.insert(1, ("content-type", content_type))
        self.transport.write(self._head(status, headers) + body)

    def start_stream(self, status: int = 200, content_type: str = "text/event-stream; charset=utf-8") -> None:
        if self.closed:
            return
        headers = [("content-type", content_type), ("transfer-encoding", "chunked"), ("cache-control", "no-cache")]
        self.transport.write(self._head(status, headers))

    def send(self, data: bytes) -> None:
        if not self.closed and data:
            self.transport.write(b"%x\r\n%b\r\n" % (len(data), data))

    def end_stream(self) -> None:
        if not self.closed:
            self.transport.write(b"0\r\n\r\n")


async def serve(handler, host: str, port: int) -> asyncio.AbstractServer:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: Connection(handler), host, port, reuse_address=True, backlog=1024)
