"""The recorder sink: every bus event as one JSON line, after a versioned header line.

Crash safety comes from flushing to the kernel at least every ``flush_interval_s``
(0.5 s by default) from a small daemon thread, so a ``kill -9`` loses at most that much
whether the process is in an event loop, the TUI, or stuck. A name ending in ``.gz``
writes a gzip stream with a ``Z_SYNC_FLUSH`` at every flush: what is on disk always
decompresses up to the last flush, and ``replay --follow`` can read it while it grows.
The file is created with mode 0600 because headers and logs can name hosts and paths.
"""

from __future__ import annotations

import os
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import orjson

from tuiapp.common.redact import mask_bytes
from tuiapp.events import _Event, dump_event
from tuiapp.record.header import build_header


def _is_gzip_name(path: Path) -> bool:
    return path.name.endswith(".gz")


class Recorder:
    """Write a recording. ``run(sub)`` for a bus subscription, or ``open``/``write``/``close``."""

    def __init__(
        self,
        path: Path | str,
        header: dict[str, Any] | None = None,
        *,
        flush_interval_s: float = 0.5,
        compress: bool | None = None,
    ) -> None:
        self.path = Path(path)
        self.header = build_header(header)
        self.flush_interval_s = flush_interval_s
        self.compress = _is_gzip_name(self.path) if compress is None else compress
        self.events_written = 0
        self.bytes_written = 0  # on disk (compressed when compressing)
        self.error: OSError | None = None  # why recording stopped early, if it did
        self._fd: int | None = None
        self._buf: list[bytes] = []
        self._lock = threading.Lock()
        self._zip = zlib.compressobj(6, zlib.DEFLATED, 31) if self.compress else None
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    # ------------------------------------------------------------ sync API

    def open(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # O_CREAT's mode is ignored for a file that already existed
        self._fd = fd
        self._buf.append(mask_bytes(orjson.dumps(self.header, default=str)) + b"\n")
        self.flush()
        self._flusher = threading.Thread(target=self._flush_loop, name="recorder-flush", daemon=True)
        self._flusher.start()

    def write(self, event: _Event) -> None:
        """Append one event (buffered; on disk within ``flush_interval_s``)."""
        line = mask_bytes(dump_event(event)) + b"\n"
        with self._lock:
            if self._fd is None:
                if self.error is not None:
                    return  # already reported; events after a disk error are dropped
                raise ValueError("recorder is not open")
            self._buf.append(line)
            self.events_written += 1

    def flush(self) -> None:
        with self._lock:
            self._flush_locked(zlib.Z_SYNC_FLUSH)

    def close(self) -> None:
        self._stop.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(timeout=2)
        with self._lock:
            if self._fd is None:
                return
            self._flush_locked(zlib.Z_FINISH)
            try:
                os.fsync(self._fd)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Recorder:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ sink

    async def run(self, sub: Any) -> None:
        """Record every event of ``sub`` until it closes; the file is complete on return."""
        try:
            self.open()
        except OSError as exc:
            # The job itself goes on (the monitor matters more than the file), but say why
            # there will be no recording; stderr, because stdout is the printer's.
            self.error = exc
            print(f"tuiapp: cannot record to {self.path}: {exc.strerror or exc}", file=sys.stderr, flush=True)
            sub.close()
            return
        try:
            async for event in sub:
                self.write(event)
        finally:
            self.close()

    # ------------------------------------------------------------ internals

    def _flush_locked(self, mode: int) -> None:
        if self._fd is None:
            return
        data = b"".join(self._buf)
        self._buf.clear()
        if self._zip is not None:
            if not data and mode == zlib.Z_SYNC_FLUSH:
                return  # an empty sync flush still writes 5 bytes; skip it
            data = self._zip.compress(data) + self._zip.flush(mode)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        self.bytes_written += len(data)

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            try:
                self.flush()
            except OSError as exc:
                # Disk full or the file's disk gone: say so once, on stderr (stdout is the
                # printer's), and keep the job running; the monitor matters more than the file.
                self.error = exc
                print(f"tuiapp: recording to {self.path} stopped: {exc}", file=sys.stderr, flush=True)
                with self._lock:
                    if self._fd is not None:
                        os.close(self._fd)
                        self._fd = None
                return
