"""What the dashboard tests share: a source that lets a test drive the bus itself."""

from __future__ import annotations

import asyncio


async def idle(bus) -> None:
    """A source that publishes nothing and runs until stopped (the test drives the bus)."""
    await asyncio.Event().wait()
