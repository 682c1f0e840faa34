"""A session wires sources to sinks: it owns the recorder, a frontend brings its own sink.

A *source* is a coroutine function taking the bus; it publishes until it is done or
cancelled. The session ends when every source has returned, one calls ``finish``, or the
frontend sets ``stop`` (quit, SIGINT/SIGTERM, a hang-up); then ``on_stop`` runs (stop the
server we launched), the bus closes and the recorder drains. The frontend (the TUI or the
headless printer, chosen by the command: ``tuiapp.commands.frontend``) subscribes before
calling ``run`` and sees the session only as ``tuiapp.controls.SessionView``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.bus import EventBus
from tuiapp.common.task_stop import stop_tasks
from tuiapp.controls import LiveControls, ReplayControls
from tuiapp.events import DENSE_KINDS, Note

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
    metrics: Any = None  # a bound tuiapp.record.metrics_endpoint.MetricsEndpoint (--metrics-port), a sink
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

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Record (when asked), run the sources until they end, then close the bus so every
        sink drains; the recording is complete when this returns."""
        recording = None
        if self.record_path is not None:
            from tuiapp.record.recorder import Recorder  # only a recording session needs it

            recorder = Recorder(self.record_path, header=self.header)
            recording = asyncio.create_task(recorder.run(self.bus.subscribe("recorder", maxlen=100_000,
                                                                             lazy_kinds=DENSE_KINDS)))
        serving = None
        if self.metrics is not None:
            serving = asyncio.create_task(self.metrics.run(self.bus.subscribe("metrics", maxlen=100_000,
                                                                              lazy_kinds=DENSE_KINDS)))
            self.bus.publish(Note(text=f"Prometheus metrics at {self.metrics.url}", source="metrics"))
        try:
            await self.run_sources(stop)
        finally:
            self.bus.close()
            done = [t for t in (recording, serving) if t is not None]
            if done:
                await asyncio.wait(done, timeout=10)

    async def run_sources(self, stop: asyncio.Event | None = None) -> None:
        """Run every source until all return, one calls finish(), or ``stop`` is set."""
        from tuiapp.common.heap import trim_heap_periodically

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
            if stuck := await stop_tasks(tasks):
                self.bus.publish(Note(level="warning", source="session",
                                      text=f"{len(stuck)} source(s) ignored their stop; left running"))
            for end in ends[1:]:
                end.cancel()
            if self.on_stop is not None:
                await self.on_stop()
