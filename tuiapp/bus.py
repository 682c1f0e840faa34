"""Fan-out of events from sources to sinks.

``publish`` never blocks and may be called from any thread (the NVML sampler runs in
its own). Each subscriber has a bounded queue; when it is full the oldest event is
dropped and counted, so a slow sink loses history, never stalls a source.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable

from tuiapp.common.ticks import next_tick_s
from tuiapp.events import _Event


def call_from_any_thread(loop: asyncio.AbstractEventLoop | None, fn: Callable[[], object]) -> None:
    """Run ``fn`` on ``loop``: now when we are on it, else soon (from whatever thread we are on)."""
    if loop is None or loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn()
    else:
        loop.call_soon_threadsafe(fn)


def set_from_any_thread(loop: asyncio.AbstractEventLoop | None, event: asyncio.Event | None) -> None:
    """Set an asyncio.Event owned by ``loop`` from whatever thread we are on."""
    if event is not None:
        call_from_any_thread(loop, event.set)


class Subscription:
    """One sink's bounded queue. Iterate it with ``async for``, or drain it synchronously."""

    def __init__(self, bus: EventBus, maxlen: int, name: str, lazy_kinds: frozenset[str] = frozenset(),
                 lazy_period_s: float = 1.0, lazy_offset_s: float = 0.0) -> None:
        self.name = name
        # Events of these kinds do not wake the reader: they wait for the next event that
        # does, or at the latest for the next tick of lazy_period_s (+ lazy_offset_s) on the
        # loop's clock. A sink that only counts them or prints them every few seconds (the
        # headless printer, the recorder) then wakes about once a second, not once per sample
        # burst; on the tick itself, in the wake-up the samplers' and pollers' timers share
        # (what their requests bring comes a tick later: an offset after the tick cost a
        # wake-up of its own every second).
        self._lazy_kinds = lazy_kinds
        # Or the reader says when: given the loop's time, the loop time to deliver at (the
        # dashboard: just before its next frame may paint, so they cost no wake of their own).
        self.lazy_due_s: Callable[[float], float] | None = None
        self._lazy_period_s = lazy_period_s
        self._lazy_offset_s = lazy_offset_s
        self._lazy_armed = False
        self.dropped = 0
        self._bus = bus
        self._queue: deque[_Event] = deque()
        self._maxlen = maxlen
        self._lock = threading.Lock()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        # A wake-up is on its way and the reader has not found the queue empty since: a
        # burst (8 GPU samples from the sampler thread) costs one cross-thread wake, not 8.
        self._wake_pending = False

    def _put(self, event: _Event) -> None:
        with self._lock:
            if len(self._queue) >= self._maxlen:
                self._queue.popleft()
                self.dropped += 1
            self._queue.append(event)
            if self._wake_pending:
                return
            if self._loop is not None and event.kind in self._lazy_kinds:
                if self._lazy_armed:
                    return
                self._lazy_armed = True
                lazy = True
            else:
                self._wake_pending = True
                lazy = False
        if lazy:
            call_from_any_thread(self._loop, self._arm_lazy)
        else:
            self._wake()

    def _wake(self) -> None:
        set_from_any_thread(self._loop, self._wakeup)

    def _arm_lazy(self) -> None:
        loop = self._loop
        assert loop is not None
        if self.lazy_due_s is not None:
            loop.call_at(self.lazy_due_s(loop.time()), self._lazy_due)
            return
        period, offset = self._lazy_period_s, self._lazy_offset_s
        loop.call_at(next_tick_s(loop.time() - offset, period) + offset, self._lazy_due)

    def _lazy_due(self) -> None:
        with self._lock:
            self._lazy_armed = False
            wake = bool(self._queue) and not self._wake_pending
            if wake:
                self._wake_pending = True
        if wake:
            self._wake()

    def drain(self) -> list[_Event]:
        """Everything queued now, oldest first."""
        with self._lock:
            events = list(self._queue)
            self._queue.clear()
        return events

    def __len__(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        self._closed = True
        self._bus._unsubscribe(self)
        self._wake()

    async def get(self) -> _Event | None:
        """The next event, or None once closed and empty."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._wakeup = asyncio.Event()
        assert self._wakeup is not None
        while True:
            with self._lock:
                if self._queue:
                    return self._queue.popleft()
                if self._closed:
                    return None
                self._wakeup.clear()
                self._wake_pending = False  # the next event must wake us
            await self._wakeup.wait()

    async def __aiter__(self) -> AsyncIterator[_Event]:
        while (event := await self.get()) is not None:
            yield event


class EventBus:
    def __init__(self) -> None:
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self.published = 0

    def subscribe(self, name: str = "", maxlen: int = 10_000, *, lazy_kinds: frozenset[str] = frozenset(),
                  lazy_period_s: float = 1.0) -> Subscription:
        """``lazy_kinds``: event kinds that need not wake this reader at once (see Subscription)."""
        sub = Subscription(self, maxlen, name, lazy_kinds, lazy_period_s)
        with self._lock:
            self._subs = [*self._subs, sub]
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subs = [s for s in self._subs if s is not sub]

    def publish(self, event: _Event) -> None:
        self.published += 1
        for sub in self._subs:  # copy-on-write list: safe to iterate without the lock
            sub._put(event)

    def close(self) -> None:
        """End every subscription's iteration once its queue is drained."""
        for sub in list(self._subs):
            sub.close()

    @property
    def dropped(self) -> dict[str, int]:
        return {s.name: s.dropped for s in self._subs}
