"""Bursts after quiet spells on a real GPU: does the adaptive PCIe cadence ever report a
wrong second? (run on the H200 via the device tool)

    PYTHONPATH=. python benchmarks/telemetry_h200_bursts.py [--bursts 40] [--out DIR]

The sampler runs at its defaults (adaptive cadence, 1 s samples) while another process
idles and then copies a burst of random
size (0.3-12 GB, host-to-device or device-to-host, full speed), again and again
(``--quiet-s``, default 5.5 s: longer than counters.CALM_S, so the cadence goes quiet). NVML's
own counters read every 5 ms are the reference. Every 1 s sample is classed: exact
(within 1% or 0.2 GB/s of the reference; a hidden wrap is off by 4.3 GB/s), n/a, or
wrong. Also prints the sampler's CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random

import pynvml as nv
from telemetry_h200 import GB, CpuTrace, Reference, sample_while, section, start_load

from tuiapp.telemetry.counters import CALM_S
from tuiapp.telemetry.nvml_backend import NvmlBackend


async def main_async(args) -> dict:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    rng = random.Random(args.seed)
    phases = [{"name": "idle", "kind": "idle", "dur_s": args.idle_s}]
    for i in range(args.bursts):
        size = int(rng.uniform(0.3, 12.0) * GB)
        phases.append({"name": f"burst {i}", "kind": rng.choice(["h2d", "d2h"]), "rate": None,
                       "dur_s": 10.0, "max_bytes": size})
        phases.append({"name": f"quiet {i}", "kind": "idle", "dur_s": args.quiet_s})
    ref = Reference(h)
    ref.thread.start()
    b = NvmlBackend(nv)
    section(b.describe())
    trace = CpuTrace()
    trace.thread.start()
    proc, lines, done = start_load(phases)
    events, cpu, wall = await sample_while(b, None, until=done)
    proc.wait()
    ref.halt.set()
    trace.halt.set()
    idle = next(x for x in lines if x.get("name") == "idle")
    idle_pct = trace.pct_core(idle["t0"] + CALM_S + 1.0, idle["t1"])
    print(f"sampler CPU in the first idle phase, after {CALM_S + 1:.0f} s: {idle_pct:.3f}% of one core "
          "(the 5 ms reference reader runs beside it)")
    gpus = [e for e in events if e.kind == "gpu" and e.index == 0]
    counts = {"exact": 0, "n/a": 0, "wrong": 0}
    rows = []
    bursts = [x for x in lines if x.get("event") == "phase" and x["name"].startswith("burst")]
    for a, s in zip(gpus, gpus[1:], strict=False):
        has_burst = any(p["t0"] < s.t_s and p["t1"] > a.t_s for p in bursts)
        for key in ("tx", "rx"):
            got = getattr(s, f"pcie_{key}_bytes_s")
            want = ref.rate(a.t_s, s.t_s, key)
            if got is None:
                cls = "n/a"
            elif abs(got - want) <= max(0.01 * want, 0.2e9):  # ~1 ms of edge skew at full speed
                cls = "exact"
            else:
                cls = "wrong"
            counts[cls] += 1
            rows.append({"t0": a.t_s, "t1": s.t_s, "dir": key, "ours": got, "ref": want,
                         "class": cls, "burst": has_burst})
            if cls == "wrong":
                print(f"WRONG {key} {a.t_s:.2f}..{s.t_s:.2f}: ours {got / GB:.3f} ref {want / GB:.3f} GB/s")
    in_burst = [r for r in rows if r["burst"]]
    print(f"quiet reads trusted only below {b.gpus[0].cadence.trust_bytes / 1e6:.2f} MB; "
          f"bursts {len(bursts)} ({sum(p['bytes'] for p in bursts) / GB:.0f} GB in all); "
          f"1 s samples x 2 directions: {counts}")
    print(f"  samples overlapping a burst: exact {sum(r['class'] == 'exact' for r in in_burst)}, "
          f"n/a {sum(r['class'] == 'n/a' for r in in_burst)}, "
          f"wrong {sum(r['class'] == 'wrong' for r in in_burst)}")
    print(f"  reference reader max gap {ref.max_gap_s * 1e3:.1f} ms; sampler CPU "
          f"{cpu / wall * 100:.3f}% of one core over {wall:.0f} s; counter reads {b.counter_reads}")
    nv.nvmlShutdown()
    return {"counts": counts, "rows": rows, "bursts": bursts, "cpu_pct": cpu / wall * 100,
            "idle_cpu_pct": idle_pct, "trust_bytes": b.gpus[0].cadence.trust_bytes}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bursts", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet-s", type=float, default=5.5)
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    res = asyncio.run(main_async(args))
    with open(os.path.join(args.out, "telemetry_h200_bursts.json"), "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
