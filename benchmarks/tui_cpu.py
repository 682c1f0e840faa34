"""CPU cost of the whole dashboard app, headless, fed live at the campaign's event rates.

Events come from tuiapp.sim.synthetic.campaign_events (8 GPUs at 1 Hz, host and /metrics
at 1 Hz, ~2 decode log lines and stats a second, one request a second at concurrency 1,
runs, trials, alerts), re-timed to the wall clock and published when due. The same pacing
loop is measured alone first, so the app's own share can be told apart.

    .venv/bin/python benchmarks/tui_cpu.py [--seconds 60] [--size 160x48] [--theme nv-dark]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from tuiapp.bus import EventBus
from tuiapp.session import Session
from tuiapp.sim.synthetic import campaign_events


def paced_source(events, t0_s: float):
    """Publish each event at its offset from the first one, stamped with the wall clock."""
    first = events[0].t_s

    async def source(bus: EventBus) -> None:
        for event in events:
            due = t0_s + (event.t_s - first)
            delay = due - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            bus.publish(event.model_copy(update={"t_s": due}))
        await asyncio.Event().wait()

    return source


async def source_only(events, seconds: float) -> float:
    bus = EventBus()
    sink = bus.subscribe("drain")
    task = asyncio.create_task(paced_source(events, time.time())(bus))
    cpu0 = time.process_time()
    await asyncio.sleep(seconds)
    cpu = time.process_time() - cpu0
    task.cancel()
    sink.drain()
    return cpu


async def with_app(events, seconds: float, size: tuple[int, int], theme: str) -> tuple[float, int, int]:
    from tuiapp.tui.app import DashboardApp

    session = Session(title="benchmark", sources=[])  # the paced source is added once the app runs
    app = DashboardApp(session, theme=theme)
    async with app.run_test(size=size, notifications=False):
        session.sources.append(paced_source(events, time.time()))
        app._sources = app.run_worker(session.run(app._stop), group="sources")
        cpu0 = time.process_time()
        await asyncio.sleep(seconds)
        cpu = time.process_time() - cpu0
        applied = app.store.applied
        app._stop.set()
    return cpu, applied, session.bus.published


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--size", default="160x48")
    parser.add_argument("--theme", default="nv-dark")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    events = list(campaign_events(args.seconds * 8))  # a few trials' worth; only the first minute plays
    events = [e for e in events if e.t_s - events[0].t_s <= args.seconds]
    print(f"{len(events)} events over {args.seconds:.0f} s ({len(events) / args.seconds:.1f}/s), size {args.size}")
    src_cpu = asyncio.run(source_only(events, args.seconds))
    app_cpu, applied, published = asyncio.run(with_app(events, args.seconds, size, args.theme))
    pct = lambda cpu: 100 * cpu / args.seconds  # noqa: E731
    print(f"pacing source alone: {pct(src_cpu):.2f}% of one core")
    print(f"app + source:        {pct(app_cpu):.2f}% of one core ({applied}/{published} events applied)")
    print(f"app alone (diff):    {pct(app_cpu - src_cpu):.2f}% of one core (target <= 5%)")


if __name__ == "__main__":
    main()
