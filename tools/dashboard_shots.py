"""Screenshots of the dashboard in each mode and size, for docs/dashboard.md.

    .venv/bin/python tools/dashboard_shots.py [--out docs/shots] [--sizes 100x30,160x48] [--modes ...]
        [--text] [--png]

Each mode is fed a fixed event list (tests/data/tui/modes.py, tests/data/tui/dashboard.jsonl)
at once, the way `python -m tuiapp.commands.preview` does, then Textual's own screenshot is
written as SVG (``--text``: the screen as plain text on stdout as well; ``--png``: each SVG
also rendered to PNG by headless Chromium, see tools/chromium/setup.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "tui"))

import modes  # noqa: E402

from tuiapp.commands.preview import preview_session, read_events  # noqa: E402
from tuiapp.tui.app import DashboardApp  # noqa: E402

CAMPAIGN = ROOT / "tests" / "data" / "tui" / "dashboard.jsonl"


class PausedReplay:
    """A replay held at 22:37 of 1:00:00: only the timeline reads it."""

    playing, speed, position_s, duration_s = False, 4.0, 1357.0, 3600.0

    def play(self) -> None: ...
    def pause(self) -> None: ...
    def set_speed(self, speed: float) -> None: ...
    def seek(self, position_s: float) -> None: ...
    def step(self) -> None: ...
    def next_alert(self) -> None: ...


def mode_events(name: str) -> list:
    return {
        "attach": lambda: modes.single(log=False),
        "launch": lambda: modes.single(log=True),
        "launch-failed": modes.failed_launch,
        "campaign": lambda: read_events(CAMPAIGN),
        "curve": modes.curve,
        "replay": lambda: read_events(CAMPAIGN),
    }[name]()


MODES = ("attach", "launch", "launch-failed", "campaign", "curve", "replay")


def session_for(name: str):
    events = mode_events(name)
    session = _session(events, name)
    if name == "replay":
        session.replay = PausedReplay()
    return session, len(events)


def _session(events: list, name: str):
    # preview_session reads a file: write the list to a temporary one
    from tuiapp.events import dump_event

    path = Path(tempfile.mkdtemp()) / f"{name}.jsonl"
    path.write_bytes(b"".join(dump_event(e) + b"\n" for e in events))
    return preview_session(path)


async def settle(app: DashboardApp, pilot, expected: int) -> None:
    for _ in range(500):
        if app.store.applied >= expected and not len(app.events):
            break
        await pilot.pause(0.01)
    app.dashboard.paint()
    await pilot.pause()
    app.dashboard.paint()
    await pilot.pause()


def screen_text(app: DashboardApp) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def shoot(name: str, size: tuple[int, int], out: Path | None, text: bool) -> Path | None:
    session, expected = session_for(name)
    app = DashboardApp(session)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot, expected)
        if text:
            print(f"===== {name} {size[0]}x{size[1]}")
            print("\n".join(screen_text(app)))
        if out is None:
            return None
        path = out / f"{name}-{size[0]}x{size[1]}.svg"
        app.save_screenshot(path.name, str(out))
        return path


def to_png(svg: Path, size: tuple[int, int]) -> Path:
    """The SVG as a PNG, rendered by headless Chromium at the SVG's own size."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium: run tools/chromium/setup.sh")
    width, height = size[0] * 12 + 40, size[1] * 25 + 80  # roughly Textual's SVG cell size plus its frame
    png = svg.with_suffix(".png")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--screenshot={png}", svg.resolve().as_uri()],
                   check=True, capture_output=True, timeout=120)
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for the SVGs (none: no files)")
    parser.add_argument("--sizes", default="100x30,160x48", help="comma list of COLSxROWS")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)}")
    parser.add_argument("--text", action="store_true", help="print each screen as text too")
    parser.add_argument("--png", action="store_true", help="render each SVG to PNG with headless Chromium")
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    for name in args.modes.split(","):
        for size in sizes:
            path = asyncio.run(shoot(name, size, args.out, args.text))
            if path is not None and args.png:
                print(to_png(path, size))
            elif path is not None:
                print(path)


if __name__ == "__main__":
    main()
