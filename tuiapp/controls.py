"""What a UI can ask of a running session. Live and replay sessions implement different sets."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


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
