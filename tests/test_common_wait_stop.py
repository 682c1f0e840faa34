"""ticks.wait_stop: a periodic task's sleep that a stop Event cuts short, without a task per tick."""

from __future__ import annotations

import asyncio
import time

from tuiapp.common.ticks import wait_stop


async def test_times_out_false_and_stops_true_at_once() -> None:
    stop = asyncio.Event()
    t0 = time.monotonic()
    assert await wait_stop(stop, 0.05) is False
    assert time.monotonic() - t0 >= 0.04
    asyncio.get_running_loop().call_later(0.05, stop.set)
    assert await wait_stop(stop, 10.0) is True  # True: the stop ended it (a timeout returns False)
    assert await wait_stop(stop, 10.0) is True  # already set: no wait at all


async def test_no_stop_is_a_plain_sleep() -> None:
    t0 = time.monotonic()
    assert await wait_stop(None, 0.03) is False
    assert time.monotonic() - t0 >= 0.02


async def test_one_waiting_task_per_event_across_ticks() -> None:
    stop = asyncio.Event()
    before = len(asyncio.all_tasks())
    for _ in range(20):
        assert await wait_stop(stop, 0.001) is False
    # wait_for(stop.wait()) made and cancelled a task per call; here one lives until the stop
    assert len(asyncio.all_tasks()) == before + 1
    stop.set()
    assert await wait_stop(stop, 1.0) is True
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before
