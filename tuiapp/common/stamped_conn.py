"""One keep-alive HTTP connection for the lean transport (common/lean_transport.py): a
non-blocking socket read from the loop's selector into a buffer for its one reader, each read
stamped with the kernel's arrival time of its newest byte (SO_TIMESTAMPNS), and reads that may
be spaced (``set_defer``; the lean transport's module doc says why)."""

from __future__ import annotations

import asyncio
import errno
import socket
import struct
import sys
import time

import httpx

from tuiapp.common.ticks import next_tick_s

LAST_CHUNK = b"0\r\n\r\n"  # a chunked body's end: a spaced read that ends with it wakes the reader at once
_READ_BYTES = 64 * 1024
# Linux's SO_TIMESTAMPNS (= its SCM_TIMESTAMPNS); Python's socket module does not name it.
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None)
_ANC_BYTES = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("@qq")


def _stamped(sock: socket.socket) -> bool:
    if _SO_TIMESTAMPNS is None:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


class Conn:
    """One keep-alive connection: a buffer filled from the socket, and its one reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        self.loop = loop
        self.sock = sock
        self.fd = sock.fileno()
        self.stamps = _stamped(sock)
        self.buf = bytearray()
        self.closed = False
        self.reads = 0  # reads that brought bytes: a stalled response is one whose count stands still
        self.timed_out = ""  # why the response's deadline closed this connection
        self.arrived_s = 0.0  # perf_counter when the newest byte read so far came in
        self.defer_s = 0.0  # > 0 while a body streams: read at most this often
        self.on_grid = False  # spaced reads fall on the shared clock grid (common/ticks.py)
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._selecting = False
        # one read buffer per connection, reused: a fresh bytes object per read (what asyncio's
        # transports allocate, at 256 KiB shrunk to a few hundred bytes of SSE) fragments the
        # heap over hours and RSS creeps up
        self._read = memoryview(bytearray(_READ_BYTES))
        self._select()

    def _select(self) -> None:
        if not self._selecting and not self.closed:
            self.loop.add_reader(self.fd, self._on_readable)
            self._selecting = True

    def _unselect(self) -> None:
        if self._selecting:
            self.loop.remove_reader(self.fd)
            self._selecting = False

    def set_defer(self, defer_s: float, *, on_grid: bool = False) -> None:
        """Space reads by ``defer_s`` (0: read every byte at once). A pending read further
        out than ``defer_s`` from now is brought forward. ``on_grid``: each spaced read at the
        next multiple of ``defer_s`` on the loop's clock, where the samplers' and the log
        relay's ticks wake the loop anyway (a stream's own phase cost a wake-up of its own
        every second), rather than ``defer_s`` after the previous read."""
        defer_s = defer_s if self.stamps else 0.0
        timer = self._timer
        self.on_grid = on_grid
        if not defer_s:
            self.defer_s = 0.0
            if timer is not None:
                timer.cancel()
                self._timer = None
                self._select()  # level-triggered: what came meanwhile is read at once
            return
        self.defer_s = defer_s
        if timer is not None and timer.when() > self.loop.time() + defer_s:
            timer.cancel()
            self._timer = self._arm()

    def _arm(self) -> asyncio.TimerHandle:
        if self.on_grid:
            return self.loop.call_at(next_tick_s(self.loop.time(), self.defer_s), self._on_timer)
        return self.loop.call_later(self.defer_s, self._on_timer)

    def _recv(self) -> bool:
        """Take what the socket holds into ``buf``; False when it held nothing."""
        got = False
        view = self._read
        while not self.closed:
            try:
                if self.stamps:
                    n, anc, _flags, _addr = self.sock.recvmsg_into([view], _ANC_BYTES)
                else:
                    n, anc = self.sock.recv_into(view), ()
            except (BlockingIOError, InterruptedError):
                return got
            except OSError:
                self._lost()
                return True
            if n == 0:
                self._lost()
                return True
            self.buf += view[:n]
            self.reads += 1
            self.arrived_s = self._arrival(anc)
            got = True
            if n < len(view):
                break
        return got

    @staticmethod
    def _arrival(anc: list) -> float:
        # the wall clock first: the perf_counter read after it makes a stamp a hair late, never early
        real_ns = time.time_ns()
        now_s = time.perf_counter()
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(data)
                return now_s - max(real_ns - (sec * 1_000_000_000 + nsec), 0) / 1e9
        return now_s

    def _on_readable(self) -> None:
        if self._recv():
            self._after_read()

    def _on_timer(self) -> None:
        self._timer = None
        if self._recv():
            self._after_read()
        else:
            self._select()  # quiet: the next byte wakes us

    def _after_read(self) -> None:
        if self.closed:
            return
        if self.defer_s and not self.buf.endswith(LAST_CHUNK):
            self._unselect()
            if self._timer is None:
                self._timer = self._arm()
        else:
            self._select()
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _lost(self) -> None:
        self.closed = True
        self._unselect()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake()

    async def send(self, data: bytes) -> None:
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self.close()
            raise httpx.RemoteProtocolError(f"send failed: {exc}") from None
        if sent < len(data):
            try:
                await self.loop.sock_sendall(self.sock, data[sent:])
            except OSError as exc:
                self.close()
                raise httpx.RemoteProtocolError(f"send failed: {exc}") from None

    async def more(self) -> None:
        """Wait until more bytes arrive; raises RemoteProtocolError at EOF, ReadTimeout when
        the response's deadline passed."""
        if self.timed_out:
            raise httpx.ReadTimeout(self.timed_out)
        if self.closed:
            raise httpx.RemoteProtocolError("server closed the connection")
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.timed_out:
            raise httpx.ReadTimeout(self.timed_out)
        if self.closed and not self.buf:
            raise httpx.RemoteProtocolError("server closed the connection")

    def close(self) -> None:
        if self.sock.fileno() < 0:
            return
        self._lost()
        self.sock.close()


async def open_conn(host: str, port: int) -> Conn:
    loop = asyncio.get_running_loop()
    try:
        infos = [(socket.AF_INET6 if ":" in host else socket.AF_INET, (host, port))]
        socket.inet_pton(infos[0][0], host)
    except OSError:  # a name, not an address
        infos = [(family, addr) for family, _t, _p, _c, addr in
                 await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    last: OSError | None = None
    for family, addr in infos:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, addr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        return Conn(loop, sock)
    raise last or OSError(errno.EHOSTUNREACH, f"no address for {host}")
