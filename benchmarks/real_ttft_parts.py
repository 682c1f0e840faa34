"""Where a streamed request's TTFT goes on the real SGLang CPU server, and what a client's
/metrics scrape timing does to it: the independent client of load_fidelity.py at one closed-loop
point, in three ways interleaved run by run.

    .venv/bin/python benchmarks/real_ttft_parts.py [--venv /tmp/tuiapp-sglang-cpu/venv]
        [--concurrency 16] [--runs 6] [--tokens 32]

  early     scrapes /metrics once a second from before its warm-up request (as tuiapp's session
            poller does, and as load_fidelity.py's independent client now does)
  at-start  the same scrapes, the first at the run's first send (load_fidelity.py's client before)
  none      no scrapes

load_fidelity.py's client keeps SGLang's own stamps: its /generate chunks carry its own wall-clock stamps (``request_received_ts`` in the last
chunk: when the tokenizer manager took the request; ``response_sent_to_client_ts`` in the
first: when it sent the first token). Client and server share the machine's clock, so each
request's TTFT (client send to the kernel's arrival stamp of the first token) splits into

    intake  = request_received_ts - send        (HTTP, parsing, waiting for the server's loop)
    server  = response_sent_to_client_ts - request_received_ts
    return  = first token's arrival - response_sent_to_client_ts

Printed per way: TTFT p50 over all requests and over each run's first burst (its first C
requests), and the mean of each part. The server runs on the upper half of the CPUs, the
client on the rest, as in load_fidelity.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

import load_fidelity as lf  # noqa: E402


def run(url: str, way: str, concurrency: int, tokens: int, requests: int) -> list[dict]:
    async def whole() -> list[dict]:
        lf._IDLE.clear()
        u = urlsplit(url)
        poller = None
        if way == "early":
            poller = asyncio.ensure_future(lf.poll_metrics(u.hostname, u.port, 1.0))
        await lf.one_request(u.hostname, u.port, lf.PROMPTS[0], tokens)  # warm-up
        if way == "at-start":
            poller = asyncio.ensure_future(lf.poll_metrics(u.hostname, u.port, 1.0))
        prompts = iter(enumerate(lf.PROMPTS[(1 + i) % len(lf.PROMPTS)] for i in range(requests)))
        out: dict[int, dict] = {}

        async def worker() -> None:
            for i, p in prompts:
                out[i] = await lf.one_request(u.hostname, u.port, p, tokens)

        try:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        finally:
            if poller is not None:
                poller.cancel()
            for conn in lf._IDLE:
                conn.close()
        return [out[i] for i in range(requests)]

    return asyncio.run(whole())


def main() -> int:
    from real_sglang import RealServer

    from tuiapp.server.ports import free_port

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/tuiapp-sglang-cpu/venv")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--tokens", type=int, default=32)
    args = ap.parse_args()
    c = args.concurrency
    cpus = sorted(os.sched_getaffinity(0))
    server_cpus = cpus[len(cpus) // 2:] if len(cpus) >= 2 else None
    if server_cpus:
        os.sched_setaffinity(0, cpus[:len(cpus) // 2])
    out = Path(tempfile.mkdtemp(prefix="real_ttft_parts_"))
    server = RealServer(Path(args.venv), out / "real.log", free_port(), cpus=server_cpus)
    server.wait_ready()
    ways = ["early", "at-start", "none"]
    got: dict[str, list[list[dict]]] = {w: [] for w in ways}
    try:
        for w in ways:  # the server's warm-up, not counted
            run(server.url, w, c, args.tokens, 8 * c)
        for r in range(args.runs):
            for w in ways[r % 3:] + ways[:r % 3]:
                got[w].append(run(server.url, w, c, args.tokens, 8 * c))
    finally:
        server.stop()
    print(f"real SGLang CPU server, concurrency {c}, {args.runs} runs x {8 * c} requests x {args.tokens} tokens each way")
    print(f"{'way':>9s} {'TTFT p50':>9s} {'first burst p50':>16s} {'intake':>8s} {'server':>8s} {'return':>8s}  (ms; parts: means)")
    for w, runs in got.items():
        reqs = [dict(x, first_s=x["t0"] + x["ttft_s"]) for rs in runs for x in rs
                if x["ok"] and x.get("received_ts") and x.get("sent_ts")]
        first = [1000 * x["ttft_s"] for rs in runs for x in rs[:c] if x["ok"]]
        ttft = [1000 * x["ttft_s"] for x in reqs]
        parts = [statistics.fmean(1000 * (x[b] - x[a]) for x in reqs)
                 for a, b in (("t0", "received_ts"), ("received_ts", "sent_ts"), ("sent_ts", "first_s"))]
        print(f"{w:>9s} {statistics.median(ttft):9.1f} {statistics.median(first):16.1f} "
              + " ".join(f"{p:8.2f}" for p in parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
