"""What the dashboard tests share: a source that lets a test drive the bus itself."""

from __future__ import annotations

import asyncio


async def idle(bus) -> None:
    """A source that publishes nothing and runs until stopped (the test drives the bus)."""
    await asyncio.Event().wait()


async def publish(pilot, bus, *events) -> None:
    """Publish ``events``, wait until the dashboard's store has applied them, paint a frame."""
    app = pilot.app
    target = app.store.applied + len(events)
    for event in events:
        bus.publish(event)
    app.dashboard.apply_queued()  # what a frame takes first (dense kinds wait for it)
    assert app.store.applied == target
    app.dashboard.paint()
    await pilot.pause()


async def paint_in_slices(pilot, bus, events, step: int) -> None:
    """Publish ``events`` a slice at a time, painting what moved after each (no frame interval
    in a test), so every later frame repaints panels that are already on screen."""
    from tuiapp.tui.widgets.panel import Panel

    app = pilot.app
    for start in range(0, len(events), step):
        for event in events[start:start + step]:
            bus.publish(event)
        app.dashboard.apply_queued()
        for panel in app.dashboard.query(Panel):
            panel._painted_s = float("-inf")
        app.dashboard.paint()
        await pilot.pause()
