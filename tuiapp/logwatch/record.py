"""A log record as the watcher assembles it: one entry's lines (a message and what continues it,
a traceback arriving in pieces), with its prefix's ranks and time, and where each line was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tuiapp.logwatch.classify import _TB_HEAD


@dataclass(slots=True)
class Record:
    line_no: int
    texts: list[str]  # as printed
    body: list[str]  # the messages: prefixes stripped
    tp: int | None
    dp: int | None
    ep: int | None
    log_t: float | None
    last_wall: float
    in_tb: bool = False  # inside a traceback, its exception line not seen yet
    held: bool = False  # a headless native backtrace waiting for what follows it
    has_tb: bool = False
    last_nonblank: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    nums: list[int] = field(default_factory=list)  # line number of each body line (ranks interleave)

    def track(self, line: str) -> None:
        if not line or line.isspace():
            return
        if _TB_HEAD in line:
            self.in_tb = True
            self.has_tb = True
        elif self.in_tb and not line[0].isspace():
            self.in_tb = False
        self.last_nonblank = line

    def add(self, text: str, body_line: str, wall: float, line_no: int) -> None:
        if not self.nums:
            self.nums.append(self.line_no)
        self.texts.append(text)
        self.body.append(body_line)
        self.nums.append(line_no)
        self.last_wall = wall
        self.track(body_line)

    @property
    def waiting(self) -> bool:
        """More of this record is due: a traceback without its exception line, or a
        message that ends with ":" (e.g. "Ninja build failed. Ninja output:")."""
        return self.in_tb or self.held or self.last_nonblank.rstrip().endswith(":")

    def expects_traceback(self) -> bool:
        head = self.body[0]
        return (self.last_nonblank.rstrip().endswith(":")
                or head.startswith("Exception ignored in") or head.startswith("Process "))

    def line_of(self, index: int) -> int:
        """The log line of body line ``index`` (a rank's lines interleave with others')."""
        return self.nums[index] if index < len(self.nums) else self.line_no + index
