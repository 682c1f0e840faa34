"""Memory of a long headless job: RSS of `tuiapp launch --headless` at concurrency 4 on the simulator.

The real pipeline in real processes: tuiapp launches the simulator through its launcher, watches its
log, benchmarks it at concurrency 4 without end and samples its GPUs, exactly as a long soak against
SGLang would. This script samples the tuiapp process's RSS every --sample-s seconds and prints the
growth after warm-up, the growth rate over the second half (least squares) and that rate
extrapolated to one hour. The issue's target: a one-hour soak grows by at most 5 MB.

    nice .venv/bin/python benchmarks/soak_memory.py --minutes 60
    nice .venv/bin/python benchmarks/soak_memory.py --minutes 15 --record /tmp/soak.jsonl.gz
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from tuiapp.server.ports import free_port

MB = 1024 * 1024


def slope_mb_per_min(points: list[tuple[float, int]]) -> float:
    n = len(points)
    if n < 2:
        return 0.0
    xs = [t / 60 for t, _ in points]
    ys = [r / MB for _, r in points]
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="soak length (default 60)")
    parser.add_argument("--warmup-minutes", type=float, default=2.0, help="RSS growth is counted from here")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--record", metavar="FILE", help="also record (default: no recording)")
    args = parser.parse_args()
    # a TERM (kill, a CI timeout) must still stop the tuiapp we started: through the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    work = Path(tempfile.mkdtemp(prefix="tuiapp-soak-"))
    sim = [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "100", "--port", str(free_port()),
           "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
    cmd = [sys.executable, "-m", "tuiapp.cli", "launch", "--headless", "--no-preflight", "--telemetry", "sim",
           "--concurrency", str(args.concurrency), "--log", str(work / "server.log")]
    if args.record:
        cmd += ["--record", args.record]
    cmd += ["--", *sim]
    out = open(work / "stdout.txt", "wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    me = psutil.Process(proc.pid)
    t0 = time.monotonic()
    points: list[tuple[float, int]] = []
    runs_at: list[int] = []  # runs printed so far, per sample: growth per run is load-independent
    counted = _RunCounter(work / "stdout.txt")
    print(f"soak: {args.minutes:g} min at concurrency {args.concurrency}, pid {proc.pid}, output in {work}",
          flush=True)
    try:
        while (elapsed := time.monotonic() - t0) < args.minutes * 60:
            if proc.poll() is not None:
                print(f"tuiapp exited early with {proc.returncode}; see {work}/stdout.txt", flush=True)
                return 1
            rss = me.memory_info().rss
            points.append((elapsed, rss))
            runs_at.append(counted.runs())
            if len(points) % max(1, int(60 / args.sample_s)) == 1:
                print(f"  t={elapsed / 60:5.1f} min  rss={rss / MB:7.1f} MB  runs={runs_at[-1]}", flush=True)
            time.sleep(args.sample_s)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        out.close()
    first = next((i for i, (t, _) in enumerate(points) if t >= args.warmup_minutes * 60), len(points))
    warm = points[first:]
    if len(warm) < 4:
        print("too short to measure: raise --minutes")
        return 1
    span_min = (warm[-1][0] - warm[0][0]) / 60
    growth_mb = (warm[-1][1] - warm[0][1]) / MB
    runs = runs_at[-1] - runs_at[first]
    half = first + len(warm) // 2
    rate = slope_mb_per_min(points[half:])
    half_runs_per_min = (runs_at[-1] - runs_at[half]) / max((points[-1][0] - points[half][0]) / 60, 1e-9)
    print(f"rss after warm-up {warm[0][1] / MB:.1f} MB, at end {warm[-1][1] / MB:.1f} MB, peak "
          f"{max(r for _, r in warm) / MB:.1f} MB")
    print(f"growth over {span_min:.1f} min after warm-up: {growth_mb:+.2f} MB over {runs} runs "
          f"({growth_mb / max(runs, 1) * 1000:+.2f} MB per 1000 runs)")
    print(f"rate over the second half: {rate:+.3f} MB/min at {half_runs_per_min:.0f} runs/min -> "
          f"{rate * 60:+.1f} MB/hour (target <= 5 MB/hour)")
    os.sync()
    return 0


class _RunCounter:
    """Counts the `run` lines tuiapp printed so far, reading only what was appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.count = 0

    def runs(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.count
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        self.count += sum(1 for line in data[:cut].splitlines() if b" run " in line)
        return self.count


if __name__ == "__main__":
    sys.exit(main())
