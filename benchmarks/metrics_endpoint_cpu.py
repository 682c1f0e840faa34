"""The Prometheus endpoint's CPU cost (--metrics-port), on the real pipeline.

    .venv/bin/python benchmarks/metrics_endpoint_cpu.py [--seconds 40] [--warmup 10] [--pairs 3]
                                                        [--concurrency 4] [--scrape-every 1]

``tuiapp attach URL --headless --telemetry sim`` against the simulator (8 simulated GPUs),
alternately without and with ``--metrics-port`` (then scraped by an HTTP client here every
``--scrape-every`` seconds, as Prometheus would, at its shortest usual interval), ``--pairs``
times, alternating which goes first. CPU is tuiapp's own user+sys over ``--seconds`` after
``--warmup``, in % of one core (benchmarks/app_cpu.py's method). Off means the endpoint module is
never imported (checked here in the headless job's modules). Prints each pair and the medians.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from app_cpu import TUIAPP, App, pct  # noqa: E402

from tuiapp.server.ports import free_port  # noqa: E402
from tuiapp.sim.process import SimProcess  # noqa: E402


def measure(sim: SimProcess, on: bool, args: argparse.Namespace) -> tuple[float, int]:
    work = Path(tempfile.mkdtemp(prefix="metrics_cpu_"))
    argv = [*TUIAPP, "attach", sim.url, "--headless", "--telemetry", "sim", "--concurrency", str(args.concurrency)]
    port = free_port()
    if on:
        argv += ["--metrics-port", str(port)]
    app = App(argv, None, work)
    scrapes, stop = [0], threading.Event()

    def scrape() -> None:
        with httpx.Client() as client:
            while not stop.wait(args.scrape_every):
                try:
                    client.get(f"http://127.0.0.1:{port}/metrics", timeout=5).raise_for_status()
                    scrapes[0] += 1
                except httpx.HTTPError:
                    pass

    scraper = threading.Thread(target=scrape, daemon=True)
    try:
        time.sleep(args.warmup)
        if not app.alive():
            raise RuntimeError("tuiapp attach exited early: " + (work / "headless.out").read_text()[-2000:])
        if on:
            scraper.start()
        c0, w0 = app.cpu_s()[0], time.monotonic()
        time.sleep(args.seconds)
        c1, w1 = app.cpu_s()[0], time.monotonic()
    finally:
        stop.set()
        app.stop()
        shutil.rmtree(work, ignore_errors=True)
    return pct(c1 - c0, w1 - w0), scrapes[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--scrape-every", type=float, default=1.0)
    args = parser.parse_args()
    sim = SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--enable-metrics"], speed=100)
    offs, ons = [], []
    try:
        sim.wait_ready()
        for i in range(args.pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            row = {}
            for on in order:
                row[on] = measure(sim, on, args)
            offs.append(row[False][0])
            ons.append(row[True][0])
            print(f"pair {i + 1}: off {row[False][0]:.2f}%  on {row[True][0]:.2f}% ({row[True][1]} scrapes)",
                  flush=True)
    finally:
        sim.proc.terminate()
        sim.proc.wait(10)
    ratios = [b / a for a, b in zip(offs, ons, strict=True) if a > 0]
    print(f"median % of one core, attach c={args.concurrency} headless, scraped every {args.scrape_every:g} s: "
          f"off {statistics.median(offs):.2f}, on {statistics.median(ons):.2f}; "
          f"on/off geometric mean {statistics.geometric_mean(ratios):.3f}")


if __name__ == "__main__":
    main()
