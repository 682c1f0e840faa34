"""Look at the dashboard on an events JSONL file, without a server: a developer's tool.

    python -m tuiapp.tui.preview tests/data/tui/dashboard.jsonl [--speed 0] [--replay] [--controls]

``--speed 0`` publishes everything at once; ``--speed N`` paces events by their ``t_s`` at N
times real time. ``--replay`` drives it through a minimal ReplayControls (forward seeks only;
the real replay source lives in tuiapp/record/) to try the timeline keys; ``--controls``
attaches stand-in LiveControls that only post a Note per key.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from tuiapp.bus import EventBus
from tuiapp.events import Alert, Note, _Event, load_event
from tuiapp.session import Session


def read_events(path: Path) -> list[_Event]:
    return [load_event(line) for line in path.read_bytes().splitlines() if line.strip()]


class EventClock:
    """The t_s of the last event published, so stand-in notes line up with the file's times."""

    t_s = 0.0


def file_source(events: list[_Event], speed: float = 0.0, clock: EventClock | None = None):
    """A source publishing ``events`` (all at once at speed 0), then idling until stopped."""

    async def source(bus: EventBus) -> None:
        previous = None
        for event in events:
            if clock is not None:
                clock.t_s = event.t_s
            if speed > 0 and previous is not None and event.t_s > previous:
                await asyncio.sleep((event.t_s - previous) / speed)
            previous = event.t_s
            bus.publish(event)
        await asyncio.Event().wait()  # a live session would keep going; so does the preview

    return source


class PreviewReplay:
    """Just enough of ReplayControls to drive the timeline: play, pause, speed, forward seek, step."""

    def __init__(self, events: list[_Event]) -> None:
        self.events = events
        self.start_s = events[0].t_s if events else 0.0
        self.duration_s = (events[-1].t_s - self.start_s) if events else 0.0
        self.position_s = 0.0
        self.playing = True
        self.speed = 1.0
        self._next = 0
        self._bus: EventBus | None = None

    def play(self) -> None:
        self.playing = True

    def pause(self) -> None:
        self.playing = False

    def set_speed(self, speed: float) -> None:
        self.speed = min(64.0, max(1.0, speed))

    def seek(self, position_s: float) -> None:
        self.position_s = min(max(position_s, self.position_s), self.duration_s)  # forward only
        self._publish_due()

    def step(self) -> None:
        if self._next < len(self.events):
            self.position_s = self.events[self._next].t_s - self.start_s
            self._publish_due()

    def next_alert(self) -> None:
        for event in self.events[self._next:]:
            if isinstance(event, Alert):
                self.seek(event.t_s - self.start_s + 0.001)
                return

    def _publish_due(self) -> None:
        while self._next < len(self.events) and self.events[self._next].t_s - self.start_s <= self.position_s:
            if self._bus is not None:
                self._bus.publish(self.events[self._next])
            self._next += 1

    async def source(self, bus: EventBus) -> None:
        self._bus = bus
        tick_s = 0.05
        while True:
            if self.playing:
                self.position_s = min(self.duration_s, self.position_s + tick_s * self.speed)
                self._publish_due()
            await asyncio.sleep(tick_s)


class PreviewControls:
    """Stand-in LiveControls: each request becomes a Note, so the keys can be tried."""

    owns_server = True

    def __init__(self, bus: EventBus, clock: EventClock) -> None:
        self.bus = bus
        self.clock = clock

    def _note(self, text: str) -> None:
        self.bus.publish(Note(t_s=self.clock.t_s, text=f"preview: {text}", source="controls"))

    def pause_bench(self) -> None:
        self._note("pause_bench")

    def resume_bench(self) -> None:
        self._note("resume_bench")

    def restart_trial(self) -> None:
        self._note("restart_trial")

    def stop_server(self) -> None:
        self._note("stop_server")


def preview_session(path: Path, *, speed: float = 0.0, replay: bool = False, controls: bool = False) -> Session:
    events = read_events(path)
    session = Session(title=f"preview {path.name}", sources=[])
    clock = EventClock()
    if replay:
        session.replay = PreviewReplay(events)
        session.sources.append(session.replay.source)
    else:
        session.sources.append(file_source(events, speed, clock))
    if controls:
        session.controls = PreviewControls(session.bus, clock)
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuiapp.tui.preview", description=__doc__.splitlines()[0])
    parser.add_argument("events", type=Path)
    parser.add_argument("--theme", default=None)
    parser.add_argument("--speed", type=float, default=0.0)
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--controls", action="store_true")
    args = parser.parse_args(argv)
    from tuiapp.tui.app import run_app

    return run_app(preview_session(args.events, speed=args.speed, replay=args.replay, controls=args.controls),
                   theme=args.theme)


if __name__ == "__main__":
    raise SystemExit(main())
