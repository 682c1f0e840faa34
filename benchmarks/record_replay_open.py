"""Time to the first frame of a one-hour recording at 8 GPUs, and the cost of seeking.

Writes a synthetic one-hour recording (plain and gzip) once, then, each in a fresh
process so no cache of ours is warm (the OS page cache is: the file was just written):
  open     ReplaySource(path): header check + the line index (offsets, times, kinds)
  first    open + the first events published on a bus subscription (what the TUI paints)
  seek     a jump to the middle (reset + state rebuild) until its events are on the bus
  full     read_recording (every line decoded; what `report` and `--summary` do)

    .venv/bin/python benchmarks/record_replay_open.py [--hours 1] [--repeat 3] [--tui]

--tui also times the whole thing a user waits for: `tuiapp replay FILE` started in a
tmux pane (Python, Textual, the index) until the dashboard shows the recording's first
trial; needs tmux and the TUI.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import asyncio, sys, time
t_start = time.perf_counter()
from tuiapp.bus import EventBus
from tuiapp.record.replay import ReplaySource, read_recording
t_imported = time.perf_counter()

async def main():
    t0 = time.perf_counter()
    replay = ReplaySource(sys.argv[1])
    t_open = time.perf_counter()
    bus = EventBus()
    sub = bus.subscribe("tui")
    task = asyncio.create_task(replay.run(bus))
    await sub.get()
    t_first = time.perf_counter()
    sub.drain()
    replay.seek(replay.duration_s / 2)
    t_seek0 = time.perf_counter()
    while replay._cursor == 0 or len(sub) == 0:
        await asyncio.sleep(0.001)
    t_seek = time.perf_counter()
    rebuilt = len(sub)
    task.cancel()
    t1 = time.perf_counter()
    rec = read_recording(sys.argv[1])
    t_full = time.perf_counter() - t1
    print(t_imported - t_start, t_open - t0, t_first - t0, t_seek - t_seek0, rebuilt, t_full, len(rec.events))

asyncio.run(main())
"""


def tui_first_frame_s(path: Path, marker: str = "trial 1/4") -> float:
    """Seconds from starting `tuiapp replay` in a tmux pane to the marker on screen."""
    session = "record-replay-open"
    tuiapp = str(Path(sys.executable).with_name("tuiapp"))
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    start = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    f"{tuiapp} replay {path}; sleep 30"], check=True)
    try:
        while time.perf_counter() - start < 20:
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            if marker in pane:
                return time.perf_counter() - start
            time.sleep(0.02)
        raise RuntimeError("the dashboard never showed the first trial")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tui", action="store_true", help="also time the real dashboard under tmux")
    args = parser.parse_args()
    if args.tui and not shutil.which("tmux"):
        parser.error("--tui needs tmux")
    from tuiapp.record.recorder import Recorder
    from tuiapp.sim.synthetic import campaign_events

    with tempfile.TemporaryDirectory() as tmp:
        for name in ("hour.jsonl", "hour.jsonl.gz"):
            path = Path(tmp) / name
            with Recorder(path, {"title": "benchmark"}) as rec:
                for ev in campaign_events(args.hours * 3600):
                    rec.write(ev)
            rows = []
            for _ in range(args.repeat):
                out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                                     check=True).stdout.split()
                rows.append([float(x) for x in out])
            med = [statistics.median(col) for col in zip(*rows, strict=True)]
            size_mb = path.stat().st_size / 1e6
            print(f"{name} ({size_mb:.1f} MB, {int(med[6])} events), median of {args.repeat} fresh processes:")
            print(f"  import tuiapp.record.replay   {med[0] * 1000:7.0f} ms")
            print(f"  open (index)                  {med[1] * 1000:7.0f} ms")
            print(f"  first frame (open + publish)  {med[2] * 1000:7.0f} ms  (target < 1000 ms)")
            print(f"  seek to the middle (rebuild)  {med[3] * 1000:7.0f} ms  ({int(med[4])} events republished)")
            print(f"  read whole (report/summary)   {med[5] * 1000:7.0f} ms")
            if args.tui:
                runs = [tui_first_frame_s(path) for _ in range(args.repeat)]
                print(f"  tuiapp replay: process start to first frame {statistics.median(runs) * 1000:7.0f} ms "
                      f"(median; runs {', '.join(f'{r * 1000:.0f}' for r in runs)} ms; target < 1000 ms)")


if __name__ == "__main__":
    main()
