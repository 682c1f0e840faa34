"""``python -m tuiapp.slurm.gpu_agent``: a node's GPU sampler, one GpuSample JSON line per GPU
per interval on stdout (the batch script sends it to ``gpus-NODE.jsonl`` in the shared job
directory), and ``follow_samples``: the submitting tuiapp's reader of that file.

The sampler is tuiapp's own (NVML, the PCIe counters the dashboard shows; with ``--sim`` trials,
the simulator's GPUs on the node); the node adds only its name. Where the plan names a
dcgm-exporter (``[slurm] dcgm``), no agent runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FOLLOW_POLL_S = 0.5


def sim_url_here() -> str | None:
    """The simulator's GPUs on this node: its --port plus the node's rank (tuiapp.sim.server)."""
    port, rank = os.environ.get("TUIAPP_PORT"), os.environ.get("SLURM_NODEID", "0")
    if not port or not port.isdigit() or not rank.isdigit():
        return None
    return f"http://127.0.0.1:{int(port) + int(rank)}"


async def _sample(interval_s: float, kind: str, sim_url: str | None = None) -> int:
    from tuiapp.events import GpuSample
    from tuiapp.telemetry import open_backend, run_gpu_sampler

    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    if kind == "sim":
        sim_url = sim_url or sim_url_here()
    try:
        backend, note = await asyncio.to_thread(open_backend, kind, sim_url=sim_url)
    except Exception as exc:  # noqa: BLE001 - no driver: say so once, on stderr
        backend, note = None, str(exc)
    if backend is None:
        print(f"gpu_agent on {node}: telemetry off: {note}", file=sys.stderr)
        return 1

    def publish(event: Any) -> None:
        if isinstance(event, GpuSample):
            sys.stdout.write(event.model_copy(update={"node": node}).model_dump_json(exclude_none=True) + "\n")
            sys.stdout.flush()

    await run_gpu_sampler(publish, backend, interval_s=interval_s)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuiapp.slurm.gpu_agent")
    parser.add_argument("--interval-s", type=float, default=1.0)
    parser.add_argument("--telemetry", default="nvml", choices=["nvml", "auto", "sim"],
                        help="sim: the simulator's GPUs on this node (--sim trials)")
    parser.add_argument("--sim-url", help="with --telemetry sim (default: from TUIAPP_PORT and SLURM_NODEID)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_sample(args.interval_s, args.telemetry, args.sim_url))
    except KeyboardInterrupt:
        return 0


async def follow_samples(path: Path, node: str, publish: Callable[[Any], None], *,
                         poll_s: float = FOLLOW_POLL_S) -> None:
    """Publish the samples a node's agent writes, as they come (until cancelled)."""
    from pydantic import ValidationError

    from tuiapp.events import GpuSample

    offset = 0
    partial = b""
    while True:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            data = b""
        offset += len(data)
        lines = (partial + data).split(b"\n")
        partial = lines.pop()
        for line in lines:
            try:
                sample = GpuSample.model_validate_json(line)
            except ValidationError:
                continue  # a torn or foreign line: the next interval brings another
            publish(sample.model_copy(update={"node": node}))
        await asyncio.sleep(poll_s)


if __name__ == "__main__":
    sys.exit(main())
