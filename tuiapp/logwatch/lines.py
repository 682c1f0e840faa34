"""Raw bytes -> numbered text lines.

Line numbers count b"\\n" only, as ``grep -n`` and editors do: a tqdm bar that redraws
itself with "\\r" stays one line, and its visible text is the last redraw. Bytes that
are not UTF-8 become U+FFFD rather than an error. A line longer than MAX_LINE_BYTES keeps
its head and its end, marked as cut, so memory stays bounded whatever the server prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE_BYTES = 256 * 1024
TAIL_BYTES = 8 * 1024  # an overlong line also keeps its end: a redrawn bar shows its last state

# Where an SGLang record starts inside a redrawn line: a bar from one rank can be
# followed, on the same physical line, by a record another rank wrote.
_EMBEDDED_PREFIX_RE = re.compile(r"(?:\([^()]*pid=\d+[^()]*\) )?\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\[rank\d+\]:")


@dataclass(slots=True)
class Line:
    line_no: int  # 1-based
    text: str
    progress: bool = False  # a "\r"-redrawn progress bar, not a log record
    cut_bytes: int = 0  # bytes dropped from an overlong line


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def make_line(line_no: int, raw: bytes, cut_bytes: int = 0, tail: bytes = b"") -> Line:
    text = decode(raw)
    if tail:
        text += (f" …[{cut_bytes} bytes cut]… " if cut_bytes else "") + decode(tail)
    if "\r" not in text:
        return Line(line_no, text, False, cut_bytes)
    text = text.rstrip("\r")
    if "\r" not in text:  # CRLF line ending
        return Line(line_no, text, False, cut_bytes)
    segments = [s for s in text.split("\r") if s.strip()]
    last = segments[-1] if segments else ""
    m = _EMBEDDED_PREFIX_RE.search(last)
    if m:
        return Line(line_no, last[m.start():], False, cut_bytes)
    return Line(line_no, last, True, cut_bytes)


class LineSplitter:
    """Accumulates chunks; hands back complete lines with their numbers."""

    def __init__(self) -> None:
        self._partial = bytearray()
        self._tail = bytearray()
        self._cut = 0
        self.line_no = 0  # number of the last complete line handed out

    def reset(self) -> None:
        self._partial.clear()
        self._tail.clear()
        self._cut = 0
        self.line_no = 0

    def _keep(self, data: bytes) -> None:
        room = MAX_LINE_BYTES - len(self._partial)
        if len(data) <= room:
            self._partial += data
            return
        if room > 0:
            self._partial += data[:room]
            data = data[room:]
        self._tail += data
        if len(self._tail) > TAIL_BYTES:
            self._cut += len(self._tail) - TAIL_BYTES
            del self._tail[:-TAIL_BYTES]

    def _take(self) -> Line:
        self.line_no += 1
        line = make_line(self.line_no, bytes(self._partial), self._cut, bytes(self._tail))
        self._partial.clear()
        self._tail.clear()
        self._cut = 0
        return line

    def feed(self, data: bytes) -> list[Line]:
        parts = data.split(b"\n")
        tail = parts.pop()
        out: list[Line] = []
        for i, part in enumerate(parts):
            if i == 0 and self._partial:
                self._keep(part)
                out.append(self._take())
            elif len(part) > MAX_LINE_BYTES + TAIL_BYTES:
                self.line_no += 1
                cut = len(part) - MAX_LINE_BYTES - TAIL_BYTES
                out.append(make_line(self.line_no, part[:MAX_LINE_BYTES], cut, part[-TAIL_BYTES:]))
            else:
                self.line_no += 1
                out.append(make_line(self.line_no, part))
        if tail:
            self._keep(tail)
        return out

    def flush(self) -> list[Line]:
        """The unterminated last line, if any (end of stream)."""
        if not self._partial:
            return []
        return [self._take()]
