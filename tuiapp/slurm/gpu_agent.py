"""``python -m tuiapp.slurm.gpu_agent``: a node's GPU sampler, one GpuSample JSON line per GPU
per interval on stdout (the batch script sends it to ``gpus-NODE.jsonl`` in the shared job
directory), and ``follow_samples``: the submitting tuiapp's reader of that file.

The sampler is tuiapp's own (NVML, the PCIe counters the dashboard shows); the node adds only
its name. Where the plan names a dcgm-exporter (``[slurm] dcgm``), no agent runs.
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


async def _sample(interval_s: float, kind: str) -> int:
    from tuiapp.events import GpuSample
    from tuiapp.telemetry import open_backend, run_gpu_sampler

    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        backend, note = await asyncio.to_thread(open_backend, kind)
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
    parser.add_argument("--telemetry", default="nvml", choices=["nvml", "auto"])
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_sample(args.interval_s, args.telemetry))
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
