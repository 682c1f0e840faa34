"""Events published on a reader thread, handed to a callback on the event loop.

The log watcher of a launched server runs on the output pump's thread. Passing every
event over with ``call_soon_threadsafe`` woke the loop once per line burst, ~9 times a
second in the demo at ~270 us of CPU each on a VM. Here only urgent events wake it (an
alert, a state change, a line that means the server is going down); log lines and the
log's batch figures wait for the relay's tick, at most ``lazy_s``, or ride along with the
next urgent event. Order is kept. The tick sits on the shared clock grid
(``common/ticks.py``), so it shares the samplers' once-a-second wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from tuiapp.common.ticks import next_tick_s

LAZY_S = 1.0  # the dashboard's figures are at most 1 s old; its frames are 1 s apart


class LoopRelay:
    def __init__(self, deliver: Callable[[Any], None], urgent: Callable[[Any], bool], *,
                 lazy_s: float = LAZY_S) -> None:
        """Create on the loop that ``deliver`` must run on."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._deliver = deliver
        self._urgent = urgent
        self._lazy_s = lazy_s
        self._lock = threading.Lock()
        self._queue: list[Any] = []
        self._wake_pending = False
        self._closed = False
        self._timer: asyncio.TimerHandle | None = None
        self._arm()

    def put(self, event: Any) -> None:
        """From any thread."""
        urgent = self._urgent(event)
        with self._lock:
            self._queue.append(event)
            wake = urgent and not self._wake_pending
            if wake:
                self._wake_pending = True
        if not wake:
            return
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(self.drain)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening
                self._loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """On the loop: deliver everything queued, oldest first."""
        with self._lock:
            events, self._queue = self._queue, []
            self._wake_pending = False
        for event in events:
            self._deliver(event)

    def close(self) -> None:
        """On the loop: deliver what is left; later events are delivered at once."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._urgent = lambda _event: True
        self.drain()

    def _arm(self) -> None:
        self._timer = self._loop.call_at(next_tick_s(self._loop.time(), self._lazy_s), self._tick)

    def _tick(self) -> None:
        self.drain()
        if not self._closed:
            self._arm()
