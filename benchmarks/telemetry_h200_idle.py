"""The sampler's CPU on an idle GPU, adaptive vs fixed PCIe cadence, in one run (H200).

    PYTHONPATH=. python benchmarks/telemetry_h200_idle.py [--seconds 20]

A shorter cut of telemetry_h200.py's idle section: the sampler at its defaults (1 s
samples), measured after counters.CALM_S so the adaptive cadence has gone quiet.
"""

from __future__ import annotations

import argparse
import asyncio

from telemetry_h200 import idle_cpu


async def main_async(seconds: float) -> None:
    for mode in ("adaptive", "fixed", "adaptive"):
        await idle_cpu(mode, seconds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    asyncio.run(main_async(args.seconds))


if __name__ == "__main__":
    main()
