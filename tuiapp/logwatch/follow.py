"""Tail a growing log file into a LogWatcher (``tail -F`` semantics).

Rotation (the path now names another inode) finishes the old file to its end, then
reads the new one from its start; truncation (size below our offset) reads again from
the start. Either way line numbers restart at 1, as they do for ``grep -n`` on the file
now there. While data flows we re-read every ACTIVE_POLL_S so alerts stay well under
100 ms behind the writer; when quiet we wait poll_s.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from tuiapp.logwatch.watcher import LogWatcher

ACTIVE_POLL_S = 0.005
READ_BYTES = 1 << 20


async def follow_file(
    path: str | os.PathLike[str],
    publish: Callable[[Any], None],
    *,
    from_start: bool = True,
    poll_s: float = 0.05,
    stop: asyncio.Event | None = None,
    watcher: LogWatcher | None = None,
    group_window_s: float = 2.0,
) -> LogWatcher:
    """Follow ``path`` until ``stop`` is set (or forever); returns the watcher used."""
    w = watcher or LogWatcher(publish, group_window_s=group_window_s)
    path = os.fspath(path)
    fd: int | None = None
    ino: tuple[int, int] | None = None
    offset = 0
    first_open = True

    def drain() -> bool:
        nonlocal offset
        got = False
        while fd is not None:
            try:
                data = os.pread(fd, READ_BYTES, offset)
            except OSError:  # e.g. the path names a directory: try again later
                return got
            if not data:
                break
            offset += len(data)
            w.feed(data)
            got = True
            if len(data) < READ_BYTES:
                break
        return got

    try:
        while True:
            stopping = stop is not None and stop.is_set()
            if fd is None:
                try:
                    fd = os.open(path, os.O_RDONLY)
                except (FileNotFoundError, PermissionError):
                    fd = None
                if fd is not None:
                    st = os.fstat(fd)
                    ino = (st.st_dev, st.st_ino)
                    offset = st.st_size if (first_open and not from_start) else 0
                # a file that appears after we started is new output: read it all
                first_open = False
            got = drain()
            if fd is not None and not got:
                try:
                    st = os.stat(path)
                    now_ino = (st.st_dev, st.st_ino)
                except FileNotFoundError:
                    now_ino, st = None, None
                if now_ino is not None and now_ino != ino:
                    drain()  # the rotated file's last writes
                    os.close(fd)
                    fd = None
                    w.restart()
                    continue
                if st is not None and st.st_size < offset:
                    offset = 0
                    w.restart()
                    continue
            w.poll()
            if stopping:
                break
            busy = got or w.has_open()
            await asyncio.sleep(min(ACTIVE_POLL_S, poll_s) if busy else poll_s)
    finally:
        if fd is not None:
            os.close(fd)
        w.flush()
    return w
