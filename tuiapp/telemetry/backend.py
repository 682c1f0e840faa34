"""What every GPU telemetry source (NVML, simulator, dcgm-exporter) looks like to the sampler.

A backend's calls may block (NVML, HTTP), so the sampler only ever calls them from its own
threads. ``sample()`` returns ready events (GpuSample per GPU, plus any Alert or Note it has
to say); ``poll()`` is for counters that must be read more often than the display interval
to stay wrap-safe; ``wait_events()`` blocks up to ``timeout_s`` for asynchronous events
(Xid errors).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tuiapp.events import GpuSample, _Event


class Backend:
    name: str = "?"
    #: when set, poll() must run at this period (seconds) between samples
    poll_period_s: float | None = None
    #: when True, wait_events() is worth a thread of its own
    has_events: bool = False

    def poll(self) -> float | None:
        """Read fast-moving counters; called from the poll thread every ``poll_period_s``,
        or after the seconds it returns when it returns a number."""
        return None

    def sample(self) -> list[_Event]:
        """One GpuSample per GPU (averaged since the previous call), plus alerts and notes."""
        raise NotImplementedError

    def wait_events(self, timeout_s: float) -> list[_Event]:
        """Block up to ``timeout_s`` for asynchronous events (alerts)."""
        return []

    def close(self) -> None:
        """Release the backend; may block (run it off the event loop)."""


class MultiBackend(Backend):
    """Several backends as one (local NVML plus remote dcgm-exporter nodes).

    A remote GPU whose UUID is also a local NVML GPU is dropped: the local reading is the
    better one (wrap-safe counters at a 1 s interval versus the exporter's collect interval).
    """

    name = "multi"

    def __init__(self, backends: list[Backend]) -> None:
        self.backends = backends
        periods = [b.poll_period_s for b in backends if b.poll_period_s]
        self.poll_period_s = min(periods) if periods else None
        self.has_events = any(b.has_events for b in backends)
        self.name = "+".join(b.name for b in backends)

    def poll(self) -> float | None:
        delays = [b.poll() for b in self.backends if b.poll_period_s]
        numbers = [d for d in delays if d is not None]
        return min(numbers) if numbers else None

    def sample(self) -> list[_Event]:
        # remote sources (HTTP with their own timeouts) run beside the first (local) one, so a
        # slow node does not delay local GPU samples
        others = call_in_threads([b.sample for b in self.backends[1:]], timeout_s=0.0,
                                 wait=False)
        results = [self.backends[0].sample()] + others.result(timeout_s=10.0)
        out: list[_Event] = []
        seen: set[str] = set()
        for events in results:
            if not isinstance(events, list):  # raised or timed out: nothing from it this time
                continue
            for ev in events:
                if isinstance(ev, GpuSample) and ev.uuid:
                    if ev.uuid in seen:
                        continue
                    seen.add(ev.uuid)
                out.append(ev)
        return out

    def wait_events(self, timeout_s: float) -> list[_Event]:
        with_events = [b for b in self.backends if b.has_events]
        if not with_events:
            return []
        # only NVML has events today; one backend gets the whole wait
        return with_events[0].wait_events(timeout_s)

    def close(self) -> None:
        for b in self.backends:
            b.close()


class _Pending:
    def __init__(self, results: list[Any], done: list[threading.Event]) -> None:
        self._results, self._done = results, done

    def result(self, timeout_s: float) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        for ev in self._done:
            ev.wait(max(0.0, deadline - time.monotonic()))
        return [r if d.is_set() else None
                for r, d in zip(self._results, self._done, strict=True)]


def call_in_threads(calls: list[Callable[[], Any]], timeout_s: float, *,
                    wait: bool = True) -> Any:
    """Run blocking calls at once in daemon threads. With ``wait`` (the default) return their
    results, where a call that raised gives its exception and one that did not finish within
    ``timeout_s`` gives None (its thread is abandoned, never joined); without ``wait``
    return a handle whose ``result(timeout_s)`` does that later."""
    results: list[Any] = [None] * len(calls)
    done = [threading.Event() for _ in calls]

    def runner(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:  # the caller decides what an error means
            results[i] = exc
        finally:
            done[i].set()

    for i in range(len(calls)):
        threading.Thread(target=runner, args=(i,), name="tuiapp-telemetry-call", daemon=True).start()
    pending = _Pending(results, done)
    return pending.result(timeout_s) if wait else pending
