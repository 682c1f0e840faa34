"""Ending helper tasks without ever waiting for ever on one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

STOP_GRACE_S = 5.0
_RECANCEL_S = 0.5


async def stop_tasks(tasks: Iterable[asyncio.Task | asyncio.Future], *,
                     grace_s: float = STOP_GRACE_S) -> list[asyncio.Task | asyncio.Future]:
    """Cancel ``tasks`` and wait until they end; returns those still running after ``grace_s``.

    A task that caught its cancel and went on (a library that turns a cancel into a timeout
    can) is cancelled again every half second; past the grace it is left running and
    returned, for the caller to say so, so a trial's end or a session's never hangs on it."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    for task in pending:
        task.cancel()
    loop = asyncio.get_running_loop()
    deadline_s = loop.time() + grace_s
    while pending:
        left_s = deadline_s - loop.time()
        if left_s <= 0:
            break
        _done, pending = await asyncio.wait(pending, timeout=min(_RECANCEL_S, left_s))
        for task in pending:
            task.cancel()
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # seen: asyncio would log it at collection
    return list(pending)
