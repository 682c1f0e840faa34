"""Where an attached server's log comes from: files it writes, or commands that print it.

``--log [NODE=]FILE`` follows a file (``follow_file``: from its end unless
``--log-from-start``, through truncation and rotation, waiting for a file that does not
exist yet). ``--log-cmd '[NODE=]CMD'`` runs CMD in a shell (``docker logs -f NAME``,
``kubectl logs -f POD``, ``ssh node1 tail -F /path``, ``journalctl -fu UNIT``) and watches
its stdout; when CMD exits it is started again with backoff, and its stderr lines are
shown as notes. Each source has its own LogWatcher, so records and ranks never mix
across nodes; NodeMerger makes one incident of the same failure on several nodes.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuiapp.events import Note
from tuiapp.logwatch.follow import follow_file
from tuiapp.logwatch.nodes import NodeMerger
from tuiapp.logwatch.watcher import LogWatcher

Publish = Callable[[Any], None]

RESTART_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
HEALTHY_RUN_S = 30.0  # a command that ran this long before exiting starts the backoff afresh
MAX_STDERR_NOTES = 20  # per start of the command: a chatty stderr must not flood the notes
_LABEL = re.compile(r"([A-Za-z0-9_.:-]+)=(?=\S)")


class LogSourceError(ValueError):
    """A --log / --log-cmd value that cannot be used."""


@dataclass(frozen=True)
class LogSource:
    kind: str  # "file" | "cmd"
    target: str  # the path, or the shell command
    node: str | None = None

    @property
    def describe(self) -> str:
        return f"{self.node + ': ' if self.node else ''}{'command ' if self.kind == 'cmd' else ''}{self.target}"


def parse_source(kind: str, value: str) -> LogSource:
    """``NODE=REST`` takes a label when NODE has no spaces and REST is not empty; a file
    whose whole name contains '=' and exists is taken as it is."""
    if not value.strip():
        raise LogSourceError(f"--log{'-cmd' if kind == 'cmd' else ''}: empty value")
    m = _LABEL.match(value)
    if m and not (kind == "file" and os.path.exists(value)):
        return LogSource(kind, value[m.end():], m.group(1))
    return LogSource(kind, value)


def label_sources(sources: list[LogSource]) -> list[LogSource]:
    """Several sources: every one needs a node name (unlabelled ones get log1, log2, ...)."""
    if len(sources) < 2:
        return sources
    out = []
    for i, src in enumerate(sources, 1):
        out.append(src if src.node else LogSource(src.kind, src.target, f"log{i}"))
    names = [s.node for s in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise LogSourceError(f"two log sources are labelled {dup!r}")
    return out


def log_source_tasks(sources: list[LogSource], publish: Publish, stop: asyncio.Event, *,
                     from_start: bool = False) -> list[Callable[[], Any]]:
    """Coroutine factories, one per source, sharing one NodeMerger."""
    merger = NodeMerger(publish)
    out = []
    for src in label_sources(sources):
        pub = merger.publisher(src.node)
        if src.kind == "file":
            out.append(_file_task(src, pub, stop, from_start))
        else:
            out.append(_cmd_task(src, pub, stop))
    return out


def _file_task(src: LogSource, publish: Publish, stop: asyncio.Event, from_start: bool):
    async def task() -> None:
        if not os.path.exists(src.target):
            publish(Note(level="info", text=f"log {src.describe}: no such file yet; waiting for it",
                         source="log"))
        await follow_file(src.target, publish, from_start=from_start, stop=stop)
    return task


def _cmd_task(src: LogSource, publish: Publish, stop: asyncio.Event):
    async def task() -> None:
        await follow_command(src.target, publish, stop=stop, node=src.node)
    return task


async def follow_command(command: str, publish: Publish, *, stop: asyncio.Event | None = None,
                         node: str | None = None, watcher: LogWatcher | None = None,
                         backoff_s: tuple[float, ...] = RESTART_BACKOFF_S) -> LogWatcher:
    """Run ``command`` in a shell and watch its stdout until ``stop`` is set, restarting it
    when it exits. Returns the watcher used."""
    w = watcher or LogWatcher(publish)
    stop = stop or asyncio.Event()
    who = f"log command{' on ' + node if node else ''}"
    failures = 0
    starts = 0
    while not stop.is_set():
        started_s = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_shell(
                command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,  # its own group: we end all of it
            )
        except OSError as exc:
            publish(Note(level="error", text=f"{who} cannot start: {exc.strerror or exc}", source="log"))
            code: int | None = None
        else:
            starts += 1
            if starts > 1:
                w.restart()  # fresh output: line numbers from 1, no record carried over
            code = await _watch_process(proc, w, publish, stop, who)
        if stop.is_set():
            break
        failures = 0 if time.monotonic() - started_s >= HEALTHY_RUN_S else failures + 1
        delay_s = backoff_s[min(max(failures - 1, 0), len(backoff_s) - 1)]
        publish(Note(level="warning", source="log",
                     text=f"{who} exited{f' with code {code}' if code is not None else ''}; "
                          f"restarting in {delay_s:g} s: {command}"))
        try:
            await asyncio.wait_for(stop.wait(), timeout=delay_s)
        except asyncio.TimeoutError:
            pass
    w.flush()
    return w


async def _watch_process(proc: asyncio.subprocess.Process, w: LogWatcher, publish: Publish,
                         stop: asyncio.Event, who: str) -> int | None:
    assert proc.stdout is not None and proc.stderr is not None

    async def pump_out() -> None:
        read = proc.stdout.read  # type: ignore[union-attr]
        while True:
            chunk = await read(1 << 16)
            if not chunk:
                break
            w.feed(chunk)
            w.poll()

    async def pump_err() -> None:
        shown = 0
        async for raw in proc.stderr:  # type: ignore[union-attr]
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            shown += 1
            if shown <= MAX_STDERR_NOTES:
                publish(Note(level="warning", text=f"{who} stderr: {line[:300]}", source="log"))
            elif shown == MAX_STDERR_NOTES + 1:
                publish(Note(level="warning", text=f"{who} stderr: more lines, not shown", source="log"))

    tasks = [asyncio.create_task(pump_out()), asyncio.create_task(pump_err())]
    ticker = asyncio.create_task(w.run_poller())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([asyncio.gather(*tasks), stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        ticker.cancel()
        stopper.cancel()
        if proc.returncode is None and (stop.is_set() or not tasks[0].done()):
            await _end(proc)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    w.poll()
    try:
        return await asyncio.wait_for(proc.wait(), timeout=2.0)
    except asyncio.TimeoutError:
        await _end(proc)
        return proc.returncode


async def _end(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM to the command's process group (ssh, docker and their children), then SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            await asyncio.wait_for(proc.wait(), timeout=wait_s)
            return
        except asyncio.TimeoutError:
            continue
