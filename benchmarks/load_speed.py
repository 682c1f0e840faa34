"""Can the client keep up? 256 concurrent streams and 100 requests/s, CPU per 100k tokens.

    .venv/bin/python benchmarks/load_speed.py [--tokens 256] [--seconds 10]

One run, interleaved, against tuiapp.sim.testserver in its own process (1 token per SSE
chunk, the worst case for a client; 10 ms per step, so a request streams for ~2.6 s and
100 req/s keeps ~256 in flight), each as a user runs it (``tuiapp attach --headless``,
/v1/chat/completions, ~32 prompt tokens, ``--tokens`` output tokens):

  today's figure: closed loop at concurrency 64 (the command bench_cost.py measures);
  concurrency 256;
  --request-rate 100 (Poisson): achieved rate (sends / sending time) against the drawn
  schedule's rate and the target.

CPU is getrusage(RUSAGE_CHILDREN) of the whole tuiapp process (start-up included); tokens
are the server's count. Targets: achieved within 2% of the schedule, and CPU per 100k
tokens at 256 streams and 100 req/s no more than at concurrency 64.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_cost import server_tokens  # noqa: E402
from bench_peers import run_measured, start_fake  # noqa: E402


def attach(url: str, load: list[str], tokens: int, summary: Path) -> tuple[float, float, dict]:
    cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--runs", "1", "--api", "chat",
           "--max-new-tokens", str(tokens), "--input-tokens", "32", "--warmup", "1", "--no-flush-cache",
           "--telemetry", "off", "--summary", str(summary), *load]
    before = server_tokens(url)
    proc, cpu, wall = run_measured(cmd)
    if proc.returncode != 0:
        raise RuntimeError(f"tuiapp attach {' '.join(load)} failed: {proc.stderr[-400:]}")
    return cpu, server_tokens(url) - before, json.loads(summary.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=10.0, help="open loop: seconds of arrivals")
    args = ap.parse_args()
    srv = start_fake(step_ms=10, tokens_per_chunk=1)
    out = Path(tempfile.mkdtemp(prefix="load_speed_"))
    rate = 100.0
    cases = [
        ("concurrency 64 (today)", ["--concurrency", "64", "--requests-per-run", "256"]),
        ("concurrency 256", ["--concurrency", "256", "--requests-per-run", "1024"]),
        ("100 req/s", ["--request-rate", str(rate), "--requests-per-run", str(int(rate * args.seconds))]),
    ]
    rows = {}
    ok = True
    try:
        for name, load in cases:
            cpu, tokens, summary = attach(srv.url, load, args.tokens, out / f"{len(rows)}.json")
            (point,) = summary["points"]
            rows[name] = cpu / tokens * 1e5
            extra = ""
            if point.get("request_rate"):
                ach, sched = point["sent_request_rate"], point["offered_request_rate"]
                lag_pct = 100 * (ach / sched - 1)
                ok &= abs(lag_pct) <= 2.0
                extra = (f"  achieved {ach:.2f} req/s vs schedule {sched:.2f} ({lag_pct:+.2f}%), target {rate:g}"
                         f" ({100 * (ach / rate - 1):+.1f}%: the Poisson draw)")
            print(f"{name:24s} tokens={tokens} cpu={cpu:.2f}s cpu/100k tok={rows[name]:.2f}s "
                  f"output={point['output_tok_s']:.0f} tok/s errors={point['errors']}{extra}", flush=True)
    finally:
        srv.stop()
    base = rows["concurrency 64 (today)"]
    for name in ("concurrency 256", "100 req/s"):
        ratio = rows[name] / base
        ok &= ratio <= 1.0
        print(f"{name}: CPU per 100k tokens = {ratio:.2f}x concurrency 64's (target <= 1.00)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
