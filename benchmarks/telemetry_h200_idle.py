"""The sampler's CPU on an idle GPU, adaptive vs fixed PCIe cadence, in one run (H200).

    PYTHONPATH=. python benchmarks/telemetry_h200_idle.py [--seconds 20]

A shorter cut of telemetry_h200.py's idle section: the sampler at its defaults (1 s
samples), measured after counters.CALM_S so the adaptive cadence has gone quiet.
"""

from __future__ import annotations

import argparse
import asyncio

import pynvml as nv
from telemetry_h200 import sample_while

from tuiapp.telemetry.counters import CALM_S
from tuiapp.telemetry.nvml_backend import NvmlBackend


async def main_async(seconds: float) -> None:
    for mode in ("adaptive", "fixed", "adaptive"):
        b = NvmlBackend(nv, pcie_poll=mode)
        reads0 = b.counter_reads
        _, cpu, wall = await sample_while(b, seconds, warm_s=CALM_S + 1.0)
        print(f"{mode:<9} sampler {cpu / wall * 100 / len(b.gpus):.3f}% of one core per GPU; "
              f"{(b.counter_reads - reads0) / (wall + CALM_S + 1.0):.1f} counter reads/s over the run; "
              f"quiet {b.gpus[0].cadence.quiet}, band {b.gpus[0].cadence.trust_bytes / 1e6:.2f} MB, "
              f"n/a intervals {b.gpus[0].rx.gaps}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    asyncio.run(main_async(args.seconds))


if __name__ == "__main__":
    main()
