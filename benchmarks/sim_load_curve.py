"""The simulator's load curve (output tok/s and TTFT p50 vs concurrency), and the real server's beside it.

Closed loop: at each concurrency C, C workers each send /generate streams back to back
(input_ids of --input-tokens distinct ids, --output-tokens with ignore_eos) until
C x --rounds requests are done. Output tok/s = completion tokens / (last finish - first
send); TTFT = first streamed event - send. The client is raw asyncio sockets counting SSE
events (no JSON per event), so at 256 streams the measuring costs little. Beside each
point: the server process tree's CPU (% of one core) over the point, the peak #queue-req
and the retractions its log shows in that point.

    python benchmarks/sim_load_curve.py                         # sim, max bs 128 (the new baseline)
    python benchmarks/sim_load_curve.py --max-bs 128,512        # the campaign's confound, both curves
    python benchmarks/sim_load_curve.py --request-rate 100      # open loop: sim CPU at 100 req/s
    python benchmarks/sim_load_curve.py --real-venv /tmp/tuiapp-sglang-cpu/venv   # + the real CPU server
    python benchmarks/sim_load_curve.py --max-total-tokens 2048  # a small KV pool: queueing, retractions
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from app_cpu import tree_cpu_s  # noqa: E402

from tuiapp.sim.process import SimProcess, free_port  # noqa: E402

DONE = b"0\r\n\r\n"
COMPLETION_RE = re.compile(rb'"completion_tokens":\s*(\d+)')
QUEUE_RE = re.compile(r"#queue-req: (\d+)")
RETRACT_RE = re.compile(r"KV cache pool is full\. Retract requests\. #retracted_reqs: (\d+)")


class Result:
    def __init__(self) -> None:
        self.ttft_s: list[float] = []
        self.tokens = 0
        self.requests = 0
        self.first_send = float("inf")
        self.last_done = 0.0
        self.short = 0  # requests that ended with fewer tokens than asked
        self.error = ""  # the first response that was not a 200 stream


def body_for(rng: random.Random, input_tokens: int, output_tokens: int) -> bytes:
    # distinct prompts (no radix hits); ids below 4000: the real tier's tiny model has a 4096 vocab
    ids = [rng.randrange(100, 4000) for _ in range(input_tokens)]
    return orjson.dumps({"input_ids": ids, "stream": True, "sampling_params": {
        "max_new_tokens": output_tokens, "ignore_eos": True, "temperature": 0}})


async def one_request(reader, writer, body: bytes, res: Result, want: int) -> bool:
    writer.write(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    t0 = time.monotonic()
    res.first_send = min(res.first_send, t0)
    first = None
    tail = b""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            return False
        if first is None and not tail and not data.startswith(b"HTTP/1.1 200"):
            res.error = res.error or data[:400].decode(errors="replace")
            return False
        if first is None and b"data: {" in data:
            first = time.monotonic()
        tail = (tail + data)[-16384:]
        if tail.endswith(DONE):
            break
    now = time.monotonic()
    got = COMPLETION_RE.findall(tail)
    n = int(got[-1]) if got else 0
    res.short += n < want
    res.tokens += n
    res.requests += 1
    res.ttft_s.append((first or now) - t0)
    res.last_done = max(res.last_done, now)
    return True


async def closed_loop(port: int, concurrency: int, total: int, input_tokens: int, output_tokens: int) -> Result:
    res = Result()
    left = [total]
    rng = random.Random(concurrency)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while left[0] > 0:
            left[0] -= 1
            if not await one_request(reader, writer, body_for(rng, input_tokens, output_tokens), res, output_tokens):
                break
        writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return res


async def open_loop(port: int, rate: float, seconds: float, input_tokens: int, output_tokens: int) -> tuple[Result, float]:
    """Poisson arrivals at ``rate``; returns the result and the achieved send rate."""
    res = Result()
    rng = random.Random(7)
    tasks = []
    sent = 0

    async def one(body: bytes) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await one_request(reader, writer, body, res, output_tokens)
        writer.close()

    t0 = time.monotonic()
    next_t = t0
    while next_t < t0 + seconds:
        delay = next_t - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(body_for(rng, input_tokens, output_tokens))))
        sent += 1
        next_t += rng.expovariate(rate)
    achieved = sent / (time.monotonic() - t0)
    await asyncio.gather(*tasks)
    return res, achieved


def log_stats(text: str) -> tuple[int, int]:
    queue = max((int(q) for q in QUEUE_RE.findall(text)), default=0)
    retracted = sum(int(n) for n in RETRACT_RE.findall(text))
    return queue, retracted


def run_curve(label: str, port: int, pid: int, read_log, args, concurrencies: list[int]) -> list[dict]:
    # a few requests first: the real server's first requests are slow (lazy init), not load
    asyncio.run(closed_loop(port, 2, 4, args.input_tokens, args.output_tokens))
    rows = []
    for c in concurrencies:
        total = max(c * args.rounds, args.min_requests)
        mark = len(read_log())
        cpu0, me0, w0 = tree_cpu_s(pid), sum(psutil.Process().cpu_times()[:2]), time.monotonic()
        res = asyncio.run(closed_loop(port, c, total, args.input_tokens, args.output_tokens))
        if not res.requests:
            raise SystemExit(f"{label} at concurrency {c}: no request completed; first response: {res.error!r}")
        wall = time.monotonic() - w0
        cpu = tree_cpu_s(pid) - cpu0
        me = sum(psutil.Process().cpu_times()[:2]) - me0
        queue, retracted = log_stats(read_log()[mark:])
        span = res.last_done - res.first_send
        row = dict(server=label, concurrency=c, requests=res.requests, output_tok_s=res.tokens / span,
                   ttft_p50_ms=1000 * statistics.median(res.ttft_s), ttft_p99_ms=1000 * quantile(res.ttft_s, 0.99),
                   server_cpu_pct=100 * cpu / wall, client_cpu_pct=100 * me / wall, max_queue=queue,
                   retracted=retracted, short=res.short)
        rows.append(row)
        print_row(row)
    return rows


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(int(q * len(xs)), len(xs) - 1)]


HEADER = (f"{'server':<22} {'conc':>5} {'reqs':>5} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9} "
          f"{'srv CPU':>8} {'cli CPU':>8} {'max q':>6} {'retract':>7}")


def print_row(r: dict) -> None:
    warn = f"  ({r['short']} short)" if r["short"] else ""
    print(f"{r['server']:<22} {r['concurrency']:>5} {r['requests']:>5} {r['output_tok_s']:>10.1f} "
          f"{r['ttft_p50_ms']:>7.0f}ms {r['ttft_p99_ms']:>7.0f}ms {r['server_cpu_pct']:>7.0f}% "
          f"{r['client_cpu_pct']:>7.0f}% {r['max_queue']:>6} {r['retracted']:>7}{warn}", flush=True)


def sim_argv(max_bs: str, args) -> list[str]:
    argv = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--cuda-graph-max-bs", max_bs,
            "--decode-log-interval", "40"]
    if args.max_total_tokens:
        argv += ["--max-total-tokens", str(args.max_total_tokens)]
    return argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="1,4,16,64,256", help="closed-loop points (comma list)")
    ap.add_argument("--max-bs", default="128", help="sim --cuda-graph-max-bs values, one curve each (comma list)")
    ap.add_argument("--max-total-tokens", type=int, default=None, help="KV pool cap for both servers")
    ap.add_argument("--input-tokens", type=int, default=128)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2, help="requests per point = concurrency x rounds")
    ap.add_argument("--min-requests", type=int, default=8)
    ap.add_argument("--request-rate", type=float, default=None, help="instead of the curve: one open-loop point on the sim")
    ap.add_argument("--seconds", type=float, default=10.0, help="open-loop duration")
    ap.add_argument("--real-venv", type=Path, default=None, help="also the real SGLang CPU server (tools/sglang_cpu/setup.sh)")
    ap.add_argument("--real-concurrency", default=None, help="the real server's points (default: --concurrency)")
    ap.add_argument("--real-log", type=Path, default=None, help="keep the real server's log here")
    ap.add_argument("--skip-sim", action="store_true", help="only the real server's curve")
    args = ap.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    print(f"input {args.input_tokens} tokens, output {args.output_tokens} tokens (ignore_eos), "
          f"{args.rounds} rounds per point; {psutil.cpu_count()} cores, load {psutil.getloadavg()[0]:.1f}")

    if args.request_rate:
        with SimProcess(sim_argv(args.max_bs.split(",")[0], args), speed=50) as sim:
            sim.wait_ready()
            cpu0, me0, w0 = tree_cpu_s(sim.proc.pid), sum(psutil.Process().cpu_times()[:2]), time.monotonic()
            res, achieved = asyncio.run(open_loop(sim.port, args.request_rate, args.seconds,
                                                  args.input_tokens, args.output_tokens))
            wall = time.monotonic() - w0
            cpu = tree_cpu_s(sim.proc.pid) - cpu0
            me = sum(psutil.Process().cpu_times()[:2]) - me0
            queue, retracted = log_stats(sim.stderr)
        print(f"open loop {args.request_rate:g} req/s for {args.seconds:g} s: sent at {achieved:.2f} req/s, "
              f"{res.requests} done, {res.tokens / (res.last_done - res.first_send):.0f} output tok/s, "
              f"TTFT p50 {1000 * statistics.median(res.ttft_s):.0f} ms p99 {1000 * quantile(res.ttft_s, 0.99):.0f} ms")
        print(f"sim CPU {100 * cpu / wall:.0f}% of one core ({1e5 * cpu / max(res.tokens, 1):.2f} s per 100k tokens), "
              f"client CPU {100 * me / wall:.0f}%; max #queue-req {queue}, retracted {retracted}")
        return

    print(HEADER)
    rows = []
    for max_bs in [] if args.skip_sim else args.max_bs.split(","):
        with SimProcess(sim_argv(max_bs, args), speed=50) as sim:
            sim.wait_ready()
            rows += run_curve(f"sim max-bs {max_bs}", sim.port, sim.proc.pid, lambda s=sim: s.stderr, args,
                              concurrencies)
    if args.real_venv:
        from real_sglang import RealServer

        # no CUDA graphs on CPU; a later --max-total-tokens wins over server_argv's 65536
        extra = ["--max-total-tokens", str(args.max_total_tokens)] if args.max_total_tokens else []
        real_points = [int(c) for c in (args.real_concurrency or args.concurrency).split(",")]
        with tempfile.TemporaryDirectory() as tmp, RealServer(args.real_venv, args.real_log or Path(tmp) / "server.log",
                                                              free_port(), *extra) as real:
            real.wait_ready()
            rows += run_curve("real SGLang CPU", real.port, real.proc.pid, lambda: real.log, args, real_points)
    by = {}
    for r in rows:
        by.setdefault(r["server"], {})[r["concurrency"]] = r
    print("\nshape (output tok/s relative to each server's concurrency-1 point):")
    for server, pts in by.items():
        base = pts[min(pts)]["output_tok_s"]
        print(f"  {server:<22} " + "  ".join(f"c{c}: x{p['output_tok_s'] / base:.2f}" for c, p in sorted(pts.items())))


if __name__ == "__main__":
    main()
