"""The server's merged stdout+stderr: drained by a thread, redacted, logged, scanned.

A thread (not the event loop) reads the pipe in chunks of up to 1 MiB, so a busy UI
never lets the pipe fill and stall 8 ranks that log 10,000 lines/s. Each chunk is
redacted once; the same bytes go to the log file and to ``on_output`` (the log watcher),
so neither disk nor screen ever sees a secret. While reading it watches for the ready
line and remembers the last error-looking line, the cause reported for a failed start.
"""

from __future__ import annotations

import math
import os
import re
import select
import threading
import time
from collections.abc import Callable
from typing import Protocol

from tuiapp.common.redact import Redactor

READY_LINE = b"The server is fired up and ready to roll!"
CHUNK_BYTES = 1 << 20
_PREFIX = re.compile(rb"^(?:\([^)\n]{0,120}\) )?\[\d{4}-\d\d-\d\d [^\]\n]{0,80}\] ")
# The last line of a traceback: "RuntimeError: ...", "torch.OutOfMemoryError: ...", "KeyError: 12".
_EXCEPTION_LINE = re.compile(
    rb"(?m)^(?:\[[^\]\n]{0,100}\] )?[ \t]*((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt)(?::[^\n]*)?)\r?$"
)
_ERRORISH_WORDS = (b"error", b"failed", b"fatal", b"killed", b"exception", b"out of memory")
_MAX_CAUSE_CHARS = 400
_MAX_PARTIAL_BYTES = 64 * 1024
# In a burst (8 ranks printing the same start-up line a moment apart, a traceback per rank)
# each write woke this thread for a read of its own (~950 reads for ~2,200 lines over the
# demo's campaign; a thread wake-up costs ~110 us on a VM). A read that follows the last one
# within BURST_GAP_S waits COALESCE_S first, so the rest of the burst comes in one read. An
# alert is at most COALESCE_S later; a lone line (the steady state) is read at once.
COALESCE_S = 0.02
BURST_GAP_S = 0.05


class OutputConsumer(Protocol):
    """What reads the output on the pump's own thread (the log watcher): thread-safe."""

    def feed(self, data: bytes) -> None: ...

    def quiet_in_s(self) -> float | None:
        """Seconds until ``poll`` has work (a record going quiet); None while nothing waits."""

    def poll(self) -> None: ...

    def flush(self) -> None:
        """End of output: finish whatever is open."""


class OutputPump:
    def __init__(
        self,
        fd: int,
        *,
        redactor: Redactor,
        log_fd: int | None,
        on_output: Callable[[bytes], None] | None,
        on_ready_line: Callable[[], None],
        consumer: OutputConsumer | None = None,
    ) -> None:
        self._fd = fd
        # The consumer runs here, on this thread, quiet deadlines included: the event loop
        # is not woken per line burst (~270 us of CPU a wake on a VM), only by what it must
        # show (the consumer's own publishing decides that).
        self._consumer = consumer
        self._redactor = redactor
        self._log_fd = log_fd
        self._on_output = on_output
        self._on_ready_line = on_ready_line
        self.ready_line_seen = False
        self.bytes_read = 0
        self.output_errors = 0  # on_output raised (the first exception is kept)
        self.first_output_error: BaseException | None = None
        self.log_error: OSError | None = None
        self._ready_tail = b""
        self._partial = b""
        self._last_exception = b""
        self._last_errorish = b""
        self._last_line = b""
        self._thread = threading.Thread(target=self._run, name="server-output", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> bool:
        """Wait for end of output (every writer gone); True when it ended."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        # One buffer for every read: os.read(fd, 1 MiB) would malloc 1 MiB per read and shrink
        # it to the few hundred bytes a quiet server wrote, which fragments the heap of a
        # job that runs for hours (RSS creeps up although nothing is kept).
        buf = bytearray(CHUNK_BYTES)
        view = memoryview(buf)
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)  # hang-up and errors are reported regardless
        last_read_s = -math.inf
        try:
            while True:
                if self._consumer is not None:
                    wait_s = self._guard(self._consumer.quiet_in_s)
                    if wait_s is not None and not poller.poll(max(1, math.ceil(wait_s * 1000))):
                        self._guard(self._consumer.poll)
                        continue
                try:
                    n = os.readv(self._fd, [buf])
                except OSError:
                    break
                if not n:
                    break
                data = bytes(view[:n])
                self.bytes_read += len(data)
                self._emit(self._redactor.feed(data))
                now_s = time.monotonic()
                if now_s - last_read_s < BURST_GAP_S:
                    time.sleep(COALESCE_S)
                last_read_s = now_s
            self._emit(self._redactor.flush())
            self._scan_lines(b"\n", final=True)
            if self._consumer is not None:  # every writer is gone: what is open is complete
                self._guard(self._consumer.flush)
        finally:
            os.close(self._fd)
            if self._log_fd is not None:
                os.close(self._log_fd)
                self._log_fd = None

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        if self._log_fd is not None and self.log_error is None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._log_fd, view):]
            except OSError as exc:  # disk full: keep serving the watcher, report later
                self.log_error = exc
        if self._on_output is not None:
            self._guard(self._on_output, data)
        if self._consumer is not None:
            self._guard(self._consumer.feed, data)
        if not self.ready_line_seen:
            window = self._ready_tail + data
            if READY_LINE in window:
                self.ready_line_seen = True
                self._on_ready_line()
            self._ready_tail = window[-len(READY_LINE):]
        self._scan_lines(data)

    def _guard(self, fn: Callable[..., object], *args: object):
        try:
            return fn(*args)
        except Exception as exc:  # a broken sink must not stop the draining
            self.output_errors += 1
            if self.first_output_error is None:
                self.first_output_error = exc
            return None

    def _scan_lines(self, data: bytes, *, final: bool = False) -> None:
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        complete, self._partial = data[:cut], data[cut:][-_MAX_PARTIAL_BYTES:]
        if final:
            complete, self._partial = data, b""
        if not complete:
            return
        for match in _EXCEPTION_LINE.finditer(complete):
            self._last_exception = match.group(1)
        # rfind on a lowered copy: ~10x faster than a per-line regex on a 1 MiB chunk.
        at = max(complete.lower().rfind(word) for word in _ERRORISH_WORDS)
        if at >= 0:
            start = complete.rfind(b"\n", 0, at) + 1
            end = complete.find(b"\n", at)
            self._last_errorish = complete[start : end if end >= 0 else len(complete)]
        stripped = complete.rstrip()
        if stripped:
            self._last_line = stripped[stripped.rfind(b"\n") + 1 :]

    def cause(self) -> str:
        """The most telling line for a failure: last exception line, else last error-ish
        line, else the last line; "" when the server printed nothing."""
        line = self._last_exception or self._last_errorish or self._last_line
        line = _PREFIX.sub(b"", line.strip())
        text = line.decode("utf-8", "replace").strip()
        return text if len(text) <= _MAX_CAUSE_CHARS else text[: _MAX_CAUSE_CHARS - 3] + "..."
