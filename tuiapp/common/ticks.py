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
