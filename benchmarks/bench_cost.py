"""Client cost: CPU seconds per 100,000 streamed tokens, ours vs AIPerf and genai-bench.

    .venv/bin/python benchmarks/bench_cost.py [--requests 256] [--tokens 256] [--concurrency 64]
    .venv/bin/python benchmarks/bench_cost.py --core-only     # just the one-core figure

One run, same workload for every tool: /v1/chat/completions streaming, ~32 prompt tokens,
``--tokens`` output tokens (ignore_eos), ``--requests`` requests at ``--concurrency``,
against tuiapp.sim.testserver in its own process (1 token per SSE chunk, the worst
case for a client; 10 ms per step). Tokens are counted by the server (every token it
streamed, so a tool that aborts streams at the end is not flattered), CPU by
getrusage(RUSAGE_CHILDREN) of each tool's whole process tree (user + sys), including
its start-up and exports. Each tool also runs a tiny job (2 requests x 8 tokens) to
estimate that fixed cost; ``marginal`` = (CPU - fixed CPU) per 100k tokens.

Ours runs as a user would: ``tuiapp attach URL --headless --runs 1 ...`` (metrics poller
and printer included).

One client core: our loop (in a subprocess pinned with taskset to one CPU, the server on
the other) against a fast server (1 ms steps, concurrency 64, 1 token per chunk): tokens
per CPU-second is what one core sustains; tokens/s achieved is also printed (lower when
the box is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import httpx  # noqa: E402
from bench_peers import run_aiperf, run_genai, run_measured, start_fake  # noqa: E402

INNER = """
import asyncio, json, resource, sys, time
from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings
url, api, conc, reqs, toks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
events = []
loop = BenchLoop(events.append, url, BenchSettings(api=api, runs=1, concurrency=conc, requests_per_run=reqs,
                 max_new_tokens=toks, warmup_requests=0, flush_cache=False))
c0, t0 = cpu(), time.perf_counter()
asyncio.run(loop.run())
c, w = cpu() - c0, time.perf_counter() - t0
n = sum(e.completion_tokens or 0 for e in events if e.kind == "request" and e.ok)
print(json.dumps({"cpu_s": c, "wall_s": w, "tokens": n, "errors": sum(1 for e in events if e.kind == "request" and not e.ok)}))
"""


def server_tokens(url: str) -> int:
    text = httpx.get(url + "/metrics", timeout=5).text
    m = re.search(r"^sglang:generation_tokens_total\{[^}]*\} (\S+)$", text, re.M)
    return int(float(m.group(1))) if m else 0


def ours(url: str, *, concurrency: int, requests: int, tokens: int) -> tuple[bool, float, float, str]:
    cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--runs", "1", "--api", "chat",
           "--concurrency", str(concurrency), "--requests-per-run", str(requests), "--max-new-tokens", str(tokens),
           "--input-tokens", "32", "--warmup", "1", "--no-flush-cache", "--telemetry", "off"]
    proc, cpu, wall = run_measured(cmd)
    return proc.returncode == 0, cpu, wall, proc.stderr[-300:]


def measure_tools(args: argparse.Namespace) -> None:
    srv = start_fake(step_ms=10, tokens_per_chunk=1)
    out = Path(tempfile.mkdtemp(prefix="bench_cost_"))
    rows = []
    try:
        tools = {
            "tuiapp": lambda c, r, t: ours(srv.url, concurrency=c, requests=r, tokens=t),
            "aiperf": lambda c, r, t: _peer(run_aiperf(srv.url, out / "aiperf", concurrency=c, requests=r, output_tokens=t)),
            "genai-bench": lambda c, r, t: _peer(run_genai(srv.url, out / "genai", concurrency=c, requests=r, output_tokens=t)),
        }
        for name, fn in tools.items():
            if args.only and name not in args.only:
                continue
            before = server_tokens(srv.url)
            small = fn(1, 2, 8)
            if small is None:
                print(f"{name:12s} skipped: not installed (see benchmarks/bench_peers.py)")
                continue
            small_tokens = server_tokens(srv.url) - before
            before = server_tokens(srv.url)
            ok, cpu, wall, note = fn(args.concurrency, args.requests, args.tokens)
            streamed = server_tokens(srv.url) - before
            if not ok:
                print(f"{name:12s} FAILED: {note}")
                continue
            fixed = small[1]
            per100k = cpu / streamed * 1e5
            marginal = (cpu - fixed) / max(streamed - small_tokens, 1) * 1e5
            rows.append((name, streamed, cpu, wall, per100k, fixed, marginal))
            print(f"{name:12s} tokens={streamed} cpu={cpu:.2f}s wall={wall:.1f}s "
                  f"cpu/100k tok={per100k:.2f}s fixed={fixed:.2f}s marginal cpu/100k tok={marginal:.2f}s", flush=True)
    finally:
        srv.stop()
    if rows:
        print("\nclient CPU seconds per 100,000 streamed tokens "
              f"(concurrency {args.concurrency}, {args.requests} x {args.tokens} tokens, 1 token/chunk):")
        for name, _, _, _, per100k, _, marginal in sorted(rows, key=lambda r: r[4]):
            print(f"  {name:12s} total {per100k:6.2f} s   marginal (minus start-up/export) {marginal:6.2f} s")


def _peer(run):
    if run is None:
        return None
    return run.ok, run.cpu_s, run.wall_s, run.note


def one_core(args: argparse.Namespace) -> None:
    ncpu = os.cpu_count() or 1
    srv = start_fake(step_ms=1, tokens_per_chunk=1, cpu=0 if ncpu > 1 else None)
    try:
        for api in ("generate", "chat"):
            cmd = [sys.executable, "-c", INNER, srv.url, api, "64", "256", "256"]
            if ncpu > 1:
                cmd = ["taskset", "-c", str(ncpu - 1), *cmd]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                print(f"one core ({api}): FAILED {proc.stderr[-300:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"one client core, /{api if api == 'generate' else 'v1/chat/completions'}, concurrency 64, "
                  f"1 token/chunk: {r['tokens'] / r['cpu_s']:,.0f} tokens per CPU-second "
                  f"({r['tokens'] / r['wall_s']:,.0f} tokens/s achieved; {r['tokens']} tokens, "
                  f"{r['errors']} errors, {time.perf_counter() - t0:.1f}s)", flush=True)
    finally:
        srv.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=256)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--only", action="append", help="tuiapp | aiperf | genai-bench (repeatable)")
    p.add_argument("--core-only", action="store_true")
    args = p.parse_args()
    if not args.core_only:
        measure_tools(args)
    one_core(args)


if __name__ == "__main__":
    main()
