"""Look at the dashboard on an events JSONL file, without a server: a developer's tool.

    python -m tuiapp.commands.preview tests/data/tui/dashboard.jsonl [--speed 0] [--replay] [--controls]

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
from tuiapp.events import Note, _Event, load_event
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


def preview_session(path: Path, *, speed: float = 0.0, controls: bool = False) -> Session:
    """The dashboard on a plain events file; recordings with their timeline: ``tuiapp replay``."""
    events = read_events(path)
    session = Session(title=f"preview {path.name}", sources=[])
    clock = EventClock()
    session.sources.append(file_source(events, speed, clock))
    if controls:
        session.controls = PreviewControls(session.bus, clock)
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuiapp.commands.preview", description=__doc__.splitlines()[0])
    parser.add_argument("events", type=Path)
    parser.add_argument("--theme", default=None)
    parser.add_argument("--speed", type=float, default=0.0)
    parser.add_argument("--controls", action="store_true")
    args = parser.parse_args(argv)
    from tuiapp.tui.app import run_app

    return run_app(preview_session(args.events, speed=args.speed, controls=args.controls),
                   theme=args.theme)


if __name__ == "__main__":
    raise SystemExit(main())
