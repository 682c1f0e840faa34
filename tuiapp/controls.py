"""What a frontend sees of a running session, and what it can ask of it. Live and replay
sessions implement different sets of controls."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from tuiapp.bus import EventBus


@runtime_checkable
class LiveControls(Protocol):
    owns_server: bool  # True when we launched the server (quit asks for confirmation)

    def pause_bench(self) -> None: ...
    def resume_bench(self) -> None: ...
    def restart_trial(self) -> None: ...
    def stop_server(self) -> None: ...


@runtime_checkable
class ReplayControls(Protocol):
    playing: bool
    speed: float  # 1..64
    position_s: float  # seconds since the recording started
    duration_s: float  # known length so far (grows with --follow)

    def play(self) -> None: ...
    def pause(self) -> None: ...
    def set_speed(self, speed: float) -> None: ...
    def seek(self, position_s: float) -> None: ...
    def step(self) -> None: ...  # publish the next event while paused
    def next_alert(self) -> None: ...  # seek to just after the next Alert


class SessionView(Protocol):
    """A session as a frontend (the TUI) sees it: the bus to subscribe to before ``run``,
    the controls its keys act on, and the exit code once it is done. ``tuiapp.session.Session``
    is the one implementation; the TUI never imports it."""

    title: str
    bus: EventBus
    controls: LiveControls | None
    replay: ReplayControls | None
    exit_code: int

    async def run(self, stop: asyncio.Event | None = None) -> None: ...
