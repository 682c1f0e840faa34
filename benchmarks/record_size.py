"""Bytes per hour of a recording at 8 GPUs and the default rates (plain and gzip).

Synthesises a simulated hour of the reference campaign's event stream (tuiapp.sim.synthetic:
8 GPU samples/s, host + /metrics 1/s, TP0 Decode lines every 40 steps, per-request lines)
and writes it through the real Recorder, as fast as it can, so an hour takes seconds;
the recorder flushes (gzip: Z_SYNC_FLUSH) every 0.5 s of simulated time, as it does live.

    .venv/bin/python benchmarks/record_size.py [--hours 1] [--gpus 8] [--gpu-hz 1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from tuiapp.events import dump_event
from tuiapp.record.recorder import Recorder
from tuiapp.sim.synthetic import campaign_events

LIMIT_MB_PER_HOUR = 50.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--gpu-hz", type=float, default=1.0)
    args = parser.parse_args()
    duration_s = args.hours * 3600
    events = list(campaign_events(duration_s, gpus=args.gpus, gpu_hz=args.gpu_hz))
    by_kind_bytes: Counter[str] = Counter()
    by_kind_count: Counter[str] = Counter()
    for ev in events:
        by_kind_bytes[ev.kind] += len(dump_event(ev)) + 1
        by_kind_count[ev.kind] += 1
    print(f"simulated {args.hours:g} h, {args.gpus} GPUs at {args.gpu_hz:g} Hz: {len(events)} events "
          f"({len(events) / duration_s:.1f}/s)")
    for kind, size in by_kind_bytes.most_common():
        print(f"  {kind:<14} {by_kind_count[kind] / args.hours:>8.0f} events/h {size / args.hours / 1e6:>7.2f} MB/h "
              f"({size / by_kind_count[kind]:.0f} B each)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("hour.jsonl", "hour.jsonl.gz"):
            path = Path(tmp) / name
            start = time.perf_counter()
            with Recorder(path, {"title": "benchmark"}, flush_interval_s=3600) as rec:
                next_flush_t_s = events[0].t_s
                for ev in events:
                    rec.write(ev)
                    if ev.t_s >= next_flush_t_s:  # flush (gzip: sync-flush) at the live cadence
                        rec.flush()
                        next_flush_t_s = ev.t_s + 0.5
            took_s = time.perf_counter() - start
            mb_h = os.path.getsize(path) / 1e6 / args.hours
            verdict = "OK" if mb_h <= LIMIT_MB_PER_HOUR else "OVER"
            print(f"{name:<14} {mb_h:7.2f} MB/hour (limit {LIMIT_MB_PER_HOUR:.0f}: {verdict}); "
                  f"recorder CPU {took_s / (duration_s / 3600):.2f} s per recorded hour")


if __name__ == "__main__":
    main()
