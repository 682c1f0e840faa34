"""LogWatcher.run_poller: polls only while a record is open, woken by the feed that opens one."""

from __future__ import annotations

import asyncio
import threading

from logwatch_helpers import Sink, tb

from tuiapp.logwatch.watcher import LogWatcher


class CountingWatcher(LogWatcher):
    polls = 0

    def poll(self, now_s: float | None = None) -> None:
        self.polls += 1
        super().poll(now_s)


async def _until(pred, limit_s: float = 5.0) -> None:
    for _ in range(int(limit_s / 0.01)):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_no_polls_while_nothing_is_open() -> None:
    w = CountingWatcher(Sink())
    task = asyncio.create_task(w.run_poller())
    await asyncio.sleep(0.3)
    assert w.polls == 0
    task.cancel()


async def test_a_feed_on_the_loop_wakes_it_and_the_alert_comes() -> None:
    sink = Sink()
    w = CountingWatcher(sink)
    task = asyncio.create_task(w.run_poller())
    await asyncio.sleep(0.05)
    w.feed(tb(0, "AssertionError: boom"))
    await _until(lambda: sink.alerts)
    assert sink.alerts[0].alert_kind == "assertion"
    await _until(lambda: not w.has_open())
    polls = w.polls
    await asyncio.sleep(0.2)
    assert w.polls == polls  # closed again: back to sleep without a timer
    task.cancel()


async def test_a_feed_from_another_thread_wakes_it() -> None:
    sink = Sink()
    w = CountingWatcher(sink)
    task = asyncio.create_task(w.run_poller())
    await asyncio.sleep(0.05)
    feeder = threading.Thread(target=w.feed, args=(tb(3, "AssertionError: from a pipe thread"),))
    feeder.start()
    feeder.join()
    await _until(lambda: sink.alerts)
    assert sink.alerts[0].ranks == [3]
    task.cancel()
