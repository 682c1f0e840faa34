"""Sampler CPU with 8 simulated GPUs (the demo's telemetry path).

    PYTHONPATH=. python benchmarks/telemetry_sim_cpu.py [--seconds 30] [--interval 1.0]

Starts the simulator (python -m tuiapp.sim.server, 8 GPUs, --sim-speed 20) as a child
process, runs run_gpu_sampler over the simulated backend at the default 1 s interval, and
prints the CPU time of the sampler's thread and of this whole process (the simulator's own
CPU is not counted: it stands in for the GPUs), as % of one core and per GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from telemetry_h200 import sampler_thread_cpu_s as sampler_cpu_s

from tuiapp.sim.process import SimProcess
from tuiapp.telemetry import open_backend, run_gpu_sampler


async def measure(url: str, seconds: float, interval_s: float) -> None:
    backend, note = open_backend("sim", sim_url=url, n_sim_gpus=8)
    print(note)
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, backend, interval_s=interval_s, stop=stop))
    await asyncio.sleep(2.0)
    c0, p0, w0 = sampler_cpu_s(), time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu, proc, wall = sampler_cpu_s() - c0, time.process_time() - p0, time.monotonic() - w0
    stop.set()
    await task
    gpus = [e for e in events if e.kind == "gpu"]
    n = len({g.index for g in gpus})
    print(f"{len(gpus)} GpuSamples from {n} GPUs over {wall + 2:.0f} s")
    print(f"sampler thread: {cpu / wall * 100:.3f}% of one core = {cpu / wall * 100 / n:.4f}% per GPU")
    print(f"whole process (sampler + asyncio loop + watchdog): {proc / wall * 100:.3f}% of one core"
          f" = {proc / wall * 100 / n:.4f}% per GPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    sim = SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"], speed=20)
    try:
        sim.wait_ready(60)
        asyncio.run(measure(sim.url, args.seconds, args.interval))
    finally:
        sim.proc.kill()
        sim.proc.wait(10)


if __name__ == "__main__":
    main()
