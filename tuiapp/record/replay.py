"""The replay source: a recording back onto the bus, with its original timing scaled by speed.

Opening indexes the file (offsets and times, no decoding), so the first events are on
the bus within a fraction of a second even for a long recording. A seek forward within
``history_s`` just publishes the events in between. Any other seek publishes a
:class:`~tuiapp.events.ReplaySeek` (consumers clear their state) and then rebuilds state
from a small set: every sparse event before the target (server states, runs, alerts,
trials, notes) plus the dense ones (GPU, host, server stats, requests; at most
``max_log_lines`` log lines) of the last ``history_s`` - enough for every "latest value"
and a recent chart history, without pushing an hour of samples through the bus.

Controls (``play``, ``pause``, ``seek``, ...) may be called from any thread; ``run``
applies them on its own loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Any

from tuiapp.bus import set_from_any_thread
from tuiapp.events import ReplaySeek
from tuiapp.record.reading import (
    DENSE_KINDS,
    LOG_KIND,
    Recording,
    RecordingError,
    RecordingIndex,
    read_recording,
)

__all__ = ["ReplaySource", "Recording", "RecordingError", "read_recording"]

MIN_SPEED, MAX_SPEED = 1.0, 64.0
_BATCH = 2000  # events published before yielding to the loop


class ReplaySource:
    """Implements :class:`tuiapp.controls.ReplayControls`; ``run`` is the session source."""

    def __init__(
        self,
        path: Path | str,
        *,
        follow: bool = False,
        speed: float = 1.0,
        history_s: float = 300.0,
        max_log_lines: int = 1000,
        stop_at_end: bool = False,
        poll_s: float = 0.25,
    ) -> None:
        self.index = RecordingIndex(path)  # raises RecordingError
        self.path = Path(path)
        self.follow = follow
        self.history_s = history_s
        self.max_log_lines = max_log_lines
        self.stop_at_end = stop_at_end
        self.poll_s = poll_s
        self.speed = min(MAX_SPEED, max(MIN_SPEED, float(speed)))
        self.playing = True
        self.published = 0
        self._cursor = 0  # next event to publish
        self._anchor_pos_s = 0.0
        self._anchor_mono = time.monotonic()
        self._pending_seek: float | None = None
        self._pending_steps = 0
        self._pending_alert: int | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        if not follow:
            self.index.finish()
        else:
            self._pending_seek = self.index.duration_s  # start at the live edge

    # ------------------------------------------------------------ ReplayControls

    @property
    def header(self) -> dict[str, Any]:
        return self.index.header

    @property
    def title(self) -> str:
        return str(self.header.get("title") or self.path.name)

    @property
    def skipped_lines(self) -> int:
        return self.index.skipped_lines

    @property
    def duration_s(self) -> float:
        return self.index.duration_s

    @property
    def position_s(self) -> float:
        return min(self._clock_s(), self.duration_s)

    def _clock_s(self) -> float:
        with self._lock:
            if not self.playing or self._loop is None:  # the clock runs only inside run()
                return self._anchor_pos_s
            return self._anchor_pos_s + (time.monotonic() - self._anchor_mono) * self.speed

    def _reanchor(self, pos_s: float) -> None:
        self._anchor_pos_s = pos_s
        self._anchor_mono = time.monotonic()

    def play(self) -> None:
        with self._lock:
            if not self.playing:
                if not self.follow and self._anchor_pos_s >= self.duration_s:
                    self._pending_seek = 0.0  # play at the end starts over
                    self._anchor_pos_s = 0.0
                self._anchor_mono = time.monotonic()
                self.playing = True
        self._poke()

    def pause(self) -> None:
        pos = self._clock_s()
        with self._lock:
            self._reanchor(min(pos, self.duration_s))
            self.playing = False
        self._poke()

    def set_speed(self, speed: float) -> None:
        pos = self._clock_s()
        with self._lock:
            self._reanchor(pos)
            self.speed = min(MAX_SPEED, max(MIN_SPEED, float(speed)))
        self._poke()

    def seek(self, position_s: float) -> None:
        target = min(max(0.0, float(position_s)), self.duration_s)
        with self._lock:
            self._pending_seek = target
            self._pending_alert = None
            self._pending_steps = 0
            self._reanchor(target)
        self._poke()

    def step(self) -> None:
        with self._lock:
            if self.playing:
                self._reanchor(self._anchor_pos_s + (time.monotonic() - self._anchor_mono) * self.speed)
                self.playing = False
            self._pending_steps += 1
        self._poke()

    def next_alert(self) -> None:
        """Pause just after the next alert (after the current position)."""
        cursor = self._cursor
        alerts = self.index.alerts
        k = bisect_left(alerts, cursor)
        if k >= len(alerts):
            return
        target = self.index.rel_s(alerts[k])
        with self._lock:  # with the seek, so run() never sees the one without the other
            self.playing = False
            self._pending_seek = target
            self._pending_alert = alerts[k]
            self._pending_steps = 0
            self._reanchor(target)
        self._poke()

    def _poke(self) -> None:
        set_from_any_thread(self._loop, self._wake)

    # ------------------------------------------------------------ the source

    async def run(self, bus: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        with self._lock:
            self._anchor_mono = time.monotonic()
        next_poll = time.monotonic()
        try:
            while True:
                self._wake.clear()
                if self.follow and time.monotonic() >= next_poll:
                    self.index.poll()
                    next_poll = time.monotonic() + self.poll_s
                with self._lock:
                    seek, self._pending_seek = self._pending_seek, None
                    alert, self._pending_alert = self._pending_alert, None
                    steps, self._pending_steps = self._pending_steps, 0
                if seek is not None:
                    self._do_seek(bus, seek, alert)
                    await asyncio.sleep(0)
                    continue
                if steps:
                    self._do_steps(bus, steps)
                    continue
                timeout = await self._play_due(bus)
                if timeout is None:
                    return
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
        finally:
            pos = self._clock_s()
            with self._lock:
                self._reanchor(min(pos, self.duration_s))
                self._loop = None

    async def _play_due(self, bus: Any) -> float | None:
        """Publish what is due; how long to wait next (None: finished, stop_at_end)."""
        idle = self.poll_s if self.follow else 3600.0
        if not self.playing:
            return idle
        index = self.index
        clock = self._clock_s()
        start = index.start_t_s
        due_t = start + clock
        n = len(index)
        published = 0
        while self._cursor < n and index.times[self._cursor] <= due_t:
            self._publish(bus, self._cursor)
            self._cursor += 1
            published += 1
            if published >= _BATCH:
                await asyncio.sleep(0)
                return 0.0
        if self._cursor < n:
            return min(idle, (index.times[self._cursor] - due_t) / self.speed)
        if self.follow:
            return self.poll_s
        with self._lock:  # the end: stay paused there, controls still work
            self._reanchor(self.duration_s)
            self.playing = False
        return None if self.stop_at_end else idle

    def _publish(self, bus: Any, i: int) -> None:
        event = self.index.event(i)
        if event is not None:
            bus.publish(event)
            self.published += 1

    def _do_steps(self, bus: Any, steps: int) -> None:
        index = self.index
        for _ in range(steps):
            if self._cursor >= len(index):
                break
            self._publish(bus, self._cursor)
            pos = index.rel_s(self._cursor)
            self._cursor += 1
            with self._lock:
                self._reanchor(max(pos, self._anchor_pos_s))

    def _do_seek(self, bus: Any, target_s: float, alert: int | None = None) -> None:
        index = self.index
        due_t = index.start_t_s + target_s
        j = bisect_right(index.times, due_t)  # publish events [.., j)
        if alert is not None:
            j = max(j, alert + 1)  # equal timestamps: the alert itself must be shown
        cur = self._cursor
        published_t = index.times[cur - 1] if cur else index.start_t_s
        if j >= cur and due_t - published_t <= self.history_s:
            for i in range(cur, j):
                self._publish(bus, i)
            self._cursor = j
            return
        bus.publish(ReplaySeek(t_s=due_t, position_s=target_s))
        for i in self._rebuild_set(j, due_t):
            self._publish(bus, i)
        self._cursor = j

    def _rebuild_set(self, j: int, due_t: float) -> list[int]:
        index = self.index
        sparse = index.sparse[: bisect_left(index.sparse, j)]
        k0 = bisect_left(index.times, due_t - self.history_s, 0, j)
        logs = index.logs[bisect_left(index.logs, k0) : bisect_left(index.logs, j)]
        logs = logs[-self.max_log_lines :] if self.max_log_lines else []
        keep_logs = set(logs)
        kinds = index.kinds
        dense = [
            i for i in range(k0, j)
            if kinds[i] in DENSE_KINDS and (kinds[i] != LOG_KIND or i in keep_logs)
        ]
        return sorted(sparse + dense)

    def close(self) -> None:
        self.index.close()
