"""Load generator for telemetry_h200.py: known host<->device copy rates and a known allocation.

Run by telemetry_h200.py in its own process (the monitor and the load are separate
processes, as with a real server). argv[1]: JSON list of phases; prints one JSON line per
finished phase on stdout.
"""

from __future__ import annotations

import json
import sys
import time

import torch

CHUNK_BYTES = 64 << 20


def out(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def copy_phase(host: torch.Tensor, dev: torch.Tensor, direction: str, rate: float | None,
               dur_s: float, max_bytes: int | None = None) -> dict:
    """Copy CHUNK_BYTES at a time; throttled phases sleep so that the running average never
    exceeds ``rate`` bytes/s; ``max_bytes`` ends the phase early (a burst of known size)."""
    t0 = time.time()
    moved = 0
    while True:
        now = time.time()
        if now - t0 >= dur_s or (max_bytes is not None and moved >= max_bytes):
            break
        if rate:
            due = t0 + moved / rate
            if due > now:
                time.sleep(min(due - now, t0 + dur_s - now))
                continue
        if direction == "h2d":
            dev.copy_(host, non_blocking=True)
        else:
            host.copy_(dev, non_blocking=True)
        torch.cuda.synchronize()
        moved += CHUNK_BYTES
    t1 = time.time()
    return {"t0": t0, "t1": t1, "bytes": moved}


def main() -> None:
    phases = json.loads(sys.argv[1])
    torch.cuda.init()
    host = torch.empty(CHUNK_BYTES, dtype=torch.uint8, pin_memory=True).fill_(1)
    dev = torch.empty(CHUNK_BYTES, dtype=torch.uint8, device="cuda").fill_(1)
    torch.cuda.synchronize()
    out(event="ready", t=time.time(), reserved=torch.cuda.memory_reserved())
    for ph in phases:
        kind = ph["kind"]
        if kind in ("h2d", "d2h"):
            r = copy_phase(host, dev, kind, ph.get("rate"), ph["dur_s"], ph.get("max_bytes"))
            out(event="phase", name=ph["name"], kind=kind, rate_target=ph.get("rate"), **r)
        elif kind == "idle":
            t0 = time.time()
            time.sleep(ph["dur_s"])
            out(event="phase", name=ph["name"], kind=kind, t0=t0, t1=time.time(), bytes=0)
        elif kind == "mem":
            before = torch.cuda.memory_reserved()
            t0 = time.time()
            x = torch.empty(ph["bytes"], dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            t_alloc = time.time()
            time.sleep(ph["dur_s"])
            out(event="phase", name=ph["name"], kind=kind, t0=t0, t_alloc=t_alloc, t1=time.time(),
                reserved_before=before, reserved_after=torch.cuda.memory_reserved(),
                allocated=torch.cuda.memory_allocated(), tensor_bytes=x.numel())
            del x
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
    out(event="done", t=time.time())


if __name__ == "__main__":
    main()
