"""Reading recordings: a line index built once, events decoded lazily, bad lines counted.

Opening an hour-long recording must show a first frame within a second, so the index
keeps only each event line's byte offset, length, time and kind code (compact arrays),
found by reading the ``{"t_s":...,"kind":"..."`` prefix that :func:`dump_event` always
writes first; events are decoded (pydantic) only when they are published. A gzip
recording is decompressed into an anonymous temporary file as it is read, so both kinds
are read by offset the same way, and both can be followed while a writer appends.

A line that is cut short (a crash mid-write), is not JSON, or is not a known event is
skipped and counted, never raised.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import orjson

from tuiapp.events import Alert, Event, _Event, load_event
from tuiapp.record.header import check_header

# One code per event class of the Event union, so a kind added there is indexed here too.
KIND_CODES: dict[str, int] = {
    cls.model_fields["kind"].default: code for code, cls in enumerate(get_args(get_args(Event)[0]))
}
UNKNOWN_KIND = 255
# Frequent kinds whose history a display shows only over a recent window; the rest are
# few and are all replayed when state is rebuilt after a seek.
DENSE_KINDS = frozenset(KIND_CODES[k] for k in ("log", "server_stats", "request", "gpu", "host"))
LOG_KIND = KIND_CODES["log"]
ALERT_KIND = KIND_CODES["alert"]

_PREFIX = b'{"t_s":'
_KIND_AT = b'"kind":"'
_CHUNK_BYTES = 4 << 20


class RecordingError(Exception):
    """The file is missing, empty or not a recording this version can read."""


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _line_time_kind(line: bytes) -> tuple[float, int] | None:
    """(t_s, kind code) from an event line's prefix, or None when the line is not usable."""
    if not line.endswith(b"}"):
        return None  # cut short
    if line.startswith(_PREFIX):
        comma = line.find(b",", 7)
        if comma > 0 and line.startswith(_KIND_AT, comma + 1):
            end = line.find(b'"', comma + 9)
            try:
                t_s = float(line[7:comma])
            except ValueError:
                return None
            return t_s, KIND_CODES.get(line[comma + 9 : end].decode("ascii", "replace"), UNKNOWN_KIND)
    try:  # written by something else, keys in another order: parse it properly
        obj = orjson.loads(line)
        return float(obj["t_s"]), KIND_CODES.get(str(obj["kind"]), UNKNOWN_KIND)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


class RecordingIndex:
    """Index of one recording file; ``poll()`` picks up lines appended since the last call."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise RecordingError(f"{self.path}: is a directory, not a recording (.jsonl or .jsonl.gz)")
        if not self.path.is_file():
            raise RecordingError(f"{self.path}: no such file")
        if self.path.stat().st_size == 0:
            raise RecordingError(f"{self.path}: empty file")
        self._src = open(self.path, "rb")  # noqa: SIM115 - held for the index's life
        self._gz = _is_gzip(self.path)
        self._zip = zlib.decompressobj(wbits=31) if self._gz else None
        self._store = tempfile.TemporaryFile() if self._gz else None  # noqa: SIM115
        self._store_size = 0
        self._read_pos = 0  # bytes consumed from the source file
        self._tail = b""  # an incomplete last line, kept until its newline arrives
        self._tail_at = 0  # store offset of _tail
        self.header: dict[str, Any] = {}
        self.offsets = array("Q")
        self.lengths = array("I")
        self.times = array("d")  # running max of t_s, so bisect works on out-of-order samples
        self.kinds = bytearray()
        self.alerts: list[int] = []  # indices of Alert lines
        self.sparse: list[int] = []  # indices of non-dense lines
        self.logs: list[int] = []
        self.skipped_lines = 0
        self.bad: set[int] = set()  # indexed lines that failed to decode
        self.poll()
        if not self.header:
            self.close()
            raise RecordingError(f"{self.path}: not a tuiapp recording (no complete header line)")
        self.start_t_s = float(self.header.get("start_t_s") or (self.times[0] if self.times else 0.0))
        if self.times and self.times[0] < self.start_t_s:
            self.start_t_s = self.times[0]

    def __len__(self) -> int:
        return len(self.offsets)

    def close(self) -> None:
        self._src.close()
        if self._store is not None:
            self._store.close()

    # ------------------------------------------------------------ growing

    def _read_new(self) -> tuple[bytes, int, int]:
        """(bytes appended since last time, decompressed; their store offset; raw bytes read)."""
        raw = os.pread(self._src.fileno(), _CHUNK_BYTES, self._read_pos)
        self._read_pos += len(raw)
        if self._zip is None:
            return raw, self._read_pos - len(raw), len(raw)
        data = self._zip.decompress(raw)
        while self._zip.eof and self._zip.unused_data:  # concatenated gzip members
            rest = self._zip.unused_data
            self._zip = zlib.decompressobj(wbits=31)
            data += self._zip.decompress(rest)
        assert self._store is not None
        at = self._store_size
        if data:
            os.pwrite(self._store.fileno(), data, at)
            self._store_size += len(data)
        return data, at, len(raw)

    def poll(self) -> int:
        """Index every complete line appended since the last poll; returns how many events."""
        before = len(self.offsets)
        while True:
            try:
                data, at, raw_len = self._read_new()
            except zlib.error:
                # corrupt compressed data: nothing after it can be read
                self.skipped_lines += 1
                self._read_pos = os.fstat(self._src.fileno()).st_size
                self._zip = zlib.decompressobj(wbits=31)
                break
            if raw_len == 0:
                break
            if not data:
                continue
            if self._tail:
                data = self._tail + data
                at = self._tail_at
            self._index_lines(data, at)
        return len(self.offsets) - before

    def _index_lines(self, data: bytes, at: int) -> None:
        pos = 0
        find = data.find
        offsets, lengths, times, kinds = self.offsets, self.lengths, self.times, self.kinds
        last_t = times[-1] if times else float("-inf")
        while True:
            nl = find(b"\n", pos)
            if nl < 0:
                break
            line = data[pos:nl]
            start = at + pos
            pos = nl + 1
            if not line.strip():
                continue
            if not self.header:
                self._take_header(line)
                continue
            parsed = _line_time_kind(line)
            if parsed is None:
                self.skipped_lines += 1
                continue
            t_s, kind = parsed
            if t_s > last_t:
                last_t = t_s
            i = len(offsets)
            offsets.append(start)
            lengths.append(len(line))
            times.append(last_t)
            kinds.append(kind)
            if kind not in DENSE_KINDS:
                self.sparse.append(i)
                if kind == ALERT_KIND:
                    self.alerts.append(i)
            elif kind == LOG_KIND:
                self.logs.append(i)
        self._tail = data[pos:]
        self._tail_at = at + pos

    def _take_header(self, line: bytes) -> None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        problem = check_header(obj)
        if problem is not None:
            raise RecordingError(f"{self.path}: {problem}")
        assert isinstance(obj, dict)
        self.header = obj

    def finish(self) -> None:
        """No more data will come: count an incomplete last line as skipped."""
        if self._tail.strip():
            # a last line without its newline may still be whole (a writer that died after "}")
            parsed = _line_time_kind(self._tail.rstrip())
            if parsed is None:
                self.skipped_lines += 1
            else:
                self._index_lines(self._tail + b"\n", self._tail_at)
        self._tail = b""

    # ------------------------------------------------------------ reading

    def rel_s(self, i: int) -> float:
        return self.times[i] - self.start_t_s

    @property
    def duration_s(self) -> float:
        return max(0.0, self.times[-1] - self.start_t_s) if self.times else 0.0

    def raw(self, i: int) -> bytes:
        fd = self._store.fileno() if self._store is not None else self._src.fileno()
        return os.pread(fd, self.lengths[i], self.offsets[i])

    def event(self, i: int) -> _Event | None:
        """Event ``i``, or None (counted once) when it does not decode."""
        if i in self.bad:
            return None
        try:
            return load_event(self.raw(i))
        except ValueError:  # pydantic.ValidationError and orjson.JSONDecodeError are ValueErrors
            self.bad.add(i)
            self.skipped_lines += 1
            return None


@dataclass
class Recording:
    """A whole recording in memory (for summaries and reports)."""

    path: Path
    header: dict[str, Any]
    events: list[_Event] = field(default_factory=list)
    skipped_lines: int = 0

    @property
    def start_t_s(self) -> float:
        start = float(self.header.get("start_t_s") or 0.0)
        if self.events:
            first = self.events[0].t_s
            start = first if not start else min(start, first)
        return start

    @property
    def duration_s(self) -> float:
        return max(0.0, self.events[-1].t_s - self.start_t_s) if self.events else 0.0

    def alerts(self) -> list[Alert]:
        return [e for e in self.events if isinstance(e, Alert)]


def iter_events(index: RecordingIndex, start: int = 0) -> Iterator[_Event]:
    for i in range(start, len(index)):
        event = index.event(i)
        if event is not None:
            yield event


def read_recording(path: Path | str) -> Recording:
    """Read a whole recording (.jsonl or .jsonl.gz); raises RecordingError if it is not one."""
    index = RecordingIndex(path)
    try:
        index.finish()
        events = list(iter_events(index))
        return Recording(Path(path), index.header, events, index.skipped_lines)
    finally:
        index.close()
