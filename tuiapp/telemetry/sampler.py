"""Running a backend: its own threads, a watchdog, and the asyncio face the app awaits.

Every backend call happens in a daemon thread (never on the event loop, never joined at
exit), so a hung NVML call stalls only telemetry: the watchdog notices a call that has not
returned for ``hang_timeout_s``, says so once in a Note, and says again when it recovers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from tuiapp.common.ticks import next_tick_s, wait_stop
from tuiapp.events import Note, _Event
from tuiapp.telemetry.backend import Backend

Publish = Callable[[_Event], None]


class _Loop:
    """One daemon thread calling ``fn`` every ``period_s`` on a fixed schedule, or, when
    ``fn`` returns a number, that many seconds after the call."""

    def __init__(self, name: str, fn: Callable[[], float | None], period_s: float,
                 halt: threading.Event) -> None:
        self.name = name
        self.fn = fn
        self.period_s = period_s
        self.halt = halt
        self.busy_since: float | None = None  # monotonic start of the call in flight
        self.calls = 0
        self.thread = threading.Thread(target=self._run, name=f"tuiapp-{name}", daemon=True)

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self.halt.is_set():
            self.busy_since = time.monotonic()
            delay_s = None
            try:
                delay_s = self.fn()
            finally:
                self.busy_since = None
                self.calls += 1
            now = time.monotonic()
            next_t = now + delay_s if isinstance(delay_s, (int, float)) else next_t + self.period_s
            if next_t < now:  # overran: skip the missed ticks rather than burst
                next_t = now
            self.halt.wait(next_t - now)


class SamplerThreads:
    """The threads behind one backend: sample (every interval), poll (counters), events."""

    def __init__(self, publish: Publish, backend: Backend, interval_s: float,
                 next_interval_s: Callable[[], float] | None = None) -> None:
        self.publish = publish
        self.backend = backend
        self.next_interval_s = next_interval_s
        self.halt = threading.Event()
        self._errors_seen: set[str] = set()
        self.loops = [_Loop("gpu-sample", self._sample, interval_s, self.halt)]
        if backend.poll_period_s:
            self.loops.append(_Loop("gpu-poll", self._guard(backend.poll), backend.poll_period_s,
                                    self.halt))
        self.events_thread = None
        if backend.has_events:
            self.events_thread = threading.Thread(target=self._events, name="tuiapp-gpu-events",
                                                  daemon=True)

    def start(self) -> None:
        for loop in self.loops:
            loop.thread.start()
        if self.events_thread:
            self.events_thread.start()

    def threads(self) -> list[threading.Thread]:
        return [lp.thread for lp in self.loops] + ([self.events_thread] if self.events_thread else [])

    def _note_error(self, exc: BaseException) -> None:
        text = f"GPU telemetry error: {type(exc).__name__}: {exc}"
        if text not in self._errors_seen:  # once per distinct error, not once a second
            self._errors_seen.add(text)
            self.publish(Note(level="warning", text=text, source=self.backend.name))

    def _guard(self, fn: Callable[[], float | None]) -> Callable[[], float | None]:
        def run() -> float | None:
            try:
                return fn()
            except Exception as exc:
                self._note_error(exc)
                return None
        return run

    def _sample(self) -> float | None:
        try:
            events = self.backend.sample()
        except Exception as exc:
            if not self.halt.is_set():  # a call cut short by the session closing is no error
                self._note_error(exc)
            return self._next()
        if self.halt.is_set():
            return None
        for ev in events:
            self.publish(ev)
        return self._next()

    def _next(self) -> float | None:
        return self.next_interval_s() if self.next_interval_s is not None else None

    def _events(self) -> None:
        while not self.halt.is_set():
            try:
                events = self.backend.wait_events(0.5)
            except Exception as exc:
                self._note_error(exc)
                self.halt.wait(0.5)
                continue
            for ev in events:
                self.publish(ev)

    def stalled_s(self) -> float:
        """How long the oldest call in flight has been running (0 when none)."""
        now = time.monotonic()
        starts = [lp.busy_since for lp in self.loops if lp.busy_since is not None]
        return max((now - s for s in starts), default=0.0)

    def stop(self, close_backend: bool = True) -> None:
        """Signal the threads and close the backend from yet another daemon thread once they
        are out of their calls (closing NVML under a hung call could crash)."""
        self.halt.set()

        def closer() -> None:
            for t in self.threads():
                t.join(timeout=2.0)
            if close_backend and not any(t.is_alive() for t in self.threads()):
                try:
                    self.backend.close()
                except Exception:
                    pass

        threading.Thread(target=closer, name="tuiapp-gpu-close", daemon=True).start()


async def run_gpu_sampler(publish: Publish, backend: Backend | None, *, interval_s: float = 1.0,
                          stop: asyncio.Event | None = None,
                          hang_timeout_s: float | None = None,
                          next_interval_s: Callable[[], float] | None = None) -> None:
    """Publish a GpuSample per GPU every ``interval_s`` until ``stop`` is set or the task is
    cancelled; Alerts (gpu_lost, xid) and Notes as they come. Closes the backend at the end.
    ``next_interval_s``: asked after each sample for the wait before the next (a cadence that
    changes with the server's phase); ``interval_s`` is then the shortest it returns."""
    if backend is None:
        return
    loop_client = getattr(backend, "loop_client", None)
    if loop_client is not None and loop_client() is not None and not backend.poll_period_s \
            and not backend.has_events:
        await _sample_on_loop(publish, backend, interval_s, stop, next_interval_s)
        return
    hang_s = hang_timeout_s if hang_timeout_s is not None else max(5.0, 3 * interval_s)
    threads = SamplerThreads(publish, backend, interval_s, next_interval_s)
    threads.start()
    stalled = False
    try:
        # a stall is news after hang_s (>= 5 s unless told): looking 4 times per hang_s is enough
        check_s = max(interval_s, hang_s / 4)
        while not await wait_stop(stop, check_s):
            stuck_s = threads.stalled_s()
            if stuck_s > hang_s and not stalled:
                stalled = True
                publish(Note(level="warning", source=backend.name,
                             text=f"GPU telemetry stalled: a {backend.name} call has not returned "
                                  f"for {stuck_s:.0f} s (hung GPU or driver?); the rest of the "
                                  "app keeps running"))
            elif stalled and stuck_s <= hang_s:
                stalled = False
                publish(Note(source=backend.name, text="GPU telemetry resumed"))
    finally:
        threads.stop()


async def _sample_on_loop(publish: Publish, backend: Backend, interval_s: float,
                          stop: asyncio.Event | None, next_interval_s: Callable[[], float] | None) -> None:
    """A backend that reads over the session's HTTP client (the simulator): its requests
    have timeouts, so it cannot hang the loop, and no thread is needed."""
    loop = asyncio.get_running_loop()
    errors_seen: set[str] = set()
    next_s = loop.time()
    try:
        while True:
            try:
                events = await backend.sample_async()  # type: ignore[attr-defined]
            except Exception as exc:  # noqa: BLE001 - a bad reading skips a tick, says so once
                text = f"GPU telemetry error: {type(exc).__name__}: {exc}"
                if text not in errors_seen:
                    errors_seen.add(text)
                    publish(Note(level="warning", text=text, source=backend.name))
                events = []
            for ev in events:
                publish(ev)
            period_s = next_interval_s() if next_interval_s is not None else interval_s
            # on the clock grid (late: skip, never burst), so the host sampler and the
            # metrics poll tick in the same wake-up
            next_s = next_tick_s(loop.time(), period_s)
            if await wait_stop(stop, next_s - loop.time()):
                return
    finally:
        try:
            backend.close()
        except Exception:
            pass


def _quiet(fn: Callable[[], float | None]) -> Callable[[], float | None]:
    def run() -> float | None:
        try:
            return fn()
        except Exception:
            return None  # the next sample() reports what is wrong
    return run


def take_snapshot(backend: Backend, interval_s: float = 1.0,
                  timeout_s: float | None = None, *, close: bool = False) -> list[_Event]:
    """Two samples ``interval_s`` apart (so rates are real averages), with the poll thread
    running in between; returns the events of both, GPU samples from the second only.
    A hung backend gives a Note after ``timeout_s`` instead of blocking forever (and is
    then never closed, even with ``close``: shutting NVML down under a call can crash)."""
    result: list[_Event] = []
    done = threading.Event()
    halt = threading.Event()

    poller_box: list[_Loop] = []

    def work() -> None:
        if backend.poll_period_s:
            poller = _Loop("gpu-poll", _quiet(backend.poll), backend.poll_period_s, halt)
            poller_box.append(poller)
            poller.thread.start()
        try:
            first = backend.sample()
            time.sleep(interval_s)
            second = backend.sample()
            result.extend(ev for ev in first if ev.kind != "gpu")
            result.extend(second)
        except Exception as exc:
            result.append(Note(level="error", source=backend.name,
                               text=f"GPU telemetry error: {type(exc).__name__}: {exc}"))
        finally:
            halt.set()
            done.set()

    threading.Thread(target=work, name="tuiapp-gpu-snapshot", daemon=True).start()
    limit_s = timeout_s if timeout_s is not None else interval_s + 10.0
    if not done.wait(limit_s):
        halt.set()
        return [Note(level="error", source=backend.name,
                     text=f"GPU telemetry: {backend.name} did not answer within {limit_s:.0f} s "
                          "(hung GPU or driver?)")]
    if close:
        if poller_box:
            poller_box[0].thread.join(timeout=1.0)
        backend.close()
    return result
