"""A session wires sources to sinks: headless (printer + recorder) or the TUI.

A *source* is a coroutine function taking the bus; it publishes until it is done or
cancelled. The session ends when every source has returned, or on SIGINT/SIGTERM, or when
the UI quits; then ``on_stop`` runs (stop the server we launched) and the sinks drain.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.bus import EventBus
from tuiapp.controls import LiveControls, ReplayControls
from tuiapp.events import Note

Source = Callable[[EventBus], Awaitable[None]]


@dataclass
class Session:
    title: str
    sources: list[Source]
    controls: LiveControls | None = None
    replay: ReplayControls | None = None
    record_path: Path | None = None
    header: dict[str, Any] = field(default_factory=dict)  # recording header extras (secrets redacted)
    on_stop: Callable[[], Awaitable[None]] | None = None
    bus: EventBus = field(default_factory=EventBus)
    exit_code: int = 0  # set by a source that knows the job failed (e.g. the server died)
    _finished: asyncio.Event | None = field(default=None, repr=False)

    def finish(self, exit_code: int | None = None) -> None:
        """Called by a source when the job is done (e.g. N runs finished): ends the session."""
        if exit_code is not None:
            self.exit_code = exit_code
        if self._finished is not None:
            self._finished.set()

    async def _guarded(self, source: Source) -> None:
        # A broken source must say so on the bus, not vanish silently or take the others down.
        try:
            await source(self.bus)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            name = getattr(source, "__qualname__", repr(source))
            self.bus.publish(Note(level="error", text=f"{name} stopped: {exc!r}", source="session"))

    async def run_sources(self, stop: asyncio.Event | None = None) -> None:
        """Run every source until all return, one calls finish(), or ``stop`` is set."""
        from tuiapp.heap import trim_heap_periodically

        self._finished = asyncio.Event()
        tasks = [asyncio.create_task(self._guarded(src)) for src in self.sources]
        everything = asyncio.gather(*tasks, return_exceptions=True)
        trimmer = asyncio.create_task(trim_heap_periodically())  # a job of hours keeps its RSS flat
        ends = [asyncio.ensure_future(everything), asyncio.create_task(self._finished.wait())]
        if stop is not None:
            ends.append(asyncio.create_task(stop.wait()))
        try:
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
        finally:
            trimmer.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for end in ends[1:]:
                end.cancel()
            if self.on_stop is not None:
                await self.on_stop()


def run(session: Session, *, headless: bool, theme: str | None = None) -> int:
    if headless:
        return asyncio.run(_run_headless(session))
    from tuiapp.tui.app import run_app  # the only place that pulls in Textual

    return run_app(session, theme=theme)


async def _run_headless(session: Session) -> int:
    from tuiapp.record.printer import Printer
    from tuiapp.record.recorder import Recorder

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # A headless job must outlive the SSH session that started it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    printer = Printer(sys.stdout)
    sinks = [asyncio.create_task(printer.run(session.bus.subscribe("printer", maxlen=100_000)))]
    if session.record_path is not None:
        recorder = Recorder(session.record_path, header=session.header)
        sinks.append(asyncio.create_task(recorder.run(session.bus.subscribe("recorder", maxlen=100_000))))
    try:
        await session.run_sources(stop)
    finally:
        session.bus.close()
        await asyncio.gather(*sinks, return_exceptions=True)
        _print_last(printer.summary(interrupted=stop.is_set()), gone=printer.stream_error is not None)
    return session.exit_code


def _print_last(text: str, *, gone: bool) -> None:
    """The summary of a job whose terminal may be gone (an SSH drop): an EIO or a broken pipe
    must not turn a job that succeeded into exit 1 with a traceback."""
    from tuiapp.cli import stdout_gone

    if not gone:
        try:
            print(text, flush=True)
            return
        except (OSError, ValueError):
            pass
    stdout_gone()  # and whatever the command prints after this goes nowhere, quietly
