"""Periodic work on one clock grid, so timers of different tasks share a wake-up.

On a VM a process wake-up costs ~110 us of CPU for a bare thread and ~270 us for an
asyncio loop, whatever the process then does (benchmarks/app_cpu.py's notes). Five tasks
ticking once a second each from its own start time wake the loop five times a second;
sleeping to the next multiple of the period on the loop's clock wakes it once, and a
4 Hz task meets the 1 Hz ones on every whole second.
"""

from __future__ import annotations

import asyncio
import math

# A timer may fire up to the clock's resolution early; without this slack the "next" tick
# computed at that moment would be the one just due, and the task would run twice.
_EARLY_SLACK = 1e-6


def next_tick_s(now_s: float, period_s: float) -> float:
    """The first multiple of ``period_s`` after ``now_s`` (a tick due right now counts as past)."""
    return (math.floor(now_s / period_s + _EARLY_SLACK) + 1) * period_s


def until_tick_s(period_s: float, loop: asyncio.AbstractEventLoop | None = None) -> float:
    """Seconds from now on the running loop's clock to its next tick of ``period_s``."""
    now = (loop or asyncio.get_running_loop()).time()
    return next_tick_s(now, period_s) - now


async def wait_stop(stop: asyncio.Event | None, timeout_s: float) -> bool:
    """Sleep ``timeout_s``, or less when ``stop`` is set (then True).

    ``asyncio.wait_for(stop.wait(), t)`` starts a task per tick and cancels it on every
    timeout: four more loop iterations per tick of each periodic task. One waiting task per
    Event, kept on the Event, is started once and only watched."""
    if stop is None:
        await asyncio.sleep(timeout_s)
        return False
    if stop.is_set():
        return True
    loop = asyncio.get_running_loop()
    waiter = getattr(stop, "_tuiapp_waiter", None)
    if waiter is None or waiter.get_loop() is not loop:
        waiter = loop.create_task(stop.wait())
        stop._tuiapp_waiter = waiter  # type: ignore[attr-defined]
    done, _ = await asyncio.wait((waiter,), timeout=max(timeout_s, 0.0))
    return bool(done)
