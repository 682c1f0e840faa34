"""A stop that a helper swallows must not hang whoever ends it; our own timeout must not
swallow someone else's cancel."""

from __future__ import annotations

import asyncio

import pytest

from tuiapp.common.lean_transport import _within
from tuiapp.common.task_stop import stop_tasks


def test_a_cancel_that_lands_with_our_timeout_is_not_turned_into_a_timeout():
    async def main():
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        async def body():
            # the external cancel is scheduled after our zero timeout: both land in one pass
            loop.call_soon(task.cancel)
            await asyncio.sleep(10)

        with pytest.raises(asyncio.CancelledError):
            await _within(body(), 0.0)

    asyncio.run(main())


def test_our_own_timeout_alone_is_a_timeout():
    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await _within(asyncio.sleep(10), 0.0)
        assert asyncio.current_task().cancelling() == 0

    asyncio.run(main())


def test_stop_tasks_cancels_again_a_task_that_swallowed_its_first_cancel():
    async def main():
        swallowed = []

        async def stubborn():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                swallowed.append(True)  # as a library that turns a cancel into a timeout
            await asyncio.sleep(10)

        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        assert await stop_tasks([task], grace_s=5.0) == []
        assert swallowed and task.cancelled()

    asyncio.run(main())


def test_stop_tasks_gives_up_on_a_task_that_never_ends_and_names_it():
    async def main():
        deaf_now = [True]

        async def deaf():
            while deaf_now:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    pass

        task = asyncio.create_task(deaf())
        await asyncio.sleep(0)
        assert await stop_tasks([task], grace_s=0.2) == [task]
        deaf_now.clear()  # the test ends what it started
        task.cancel()
        await asyncio.wait({task})

    asyncio.run(main())


def test_stop_tasks_reads_a_failed_task_exception():
    async def main():
        async def broken():
            raise ValueError("x")

        task = asyncio.create_task(broken())
        await asyncio.sleep(0)
        assert await stop_tasks([task]) == []
        assert isinstance(task.exception(), ValueError)

    asyncio.run(main())
