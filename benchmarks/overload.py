"""Overload measured, never hidden (issue 45): a server that holds a few streams and refuses the
rest, flooded; and --find-max-load's answer against the server's capacity measured on its own.

Two servers per target, both with --max-running-requests R (default 4):
  1. flood: also --max-queued-requests Q (default 1), so the rest is refused (0.5.23: HTTP 200
     and an in-stream abort "The request queue is full."). `tuiapp attach --request-rate RATE`
     (default 200) for two runs; printed: offered / sent / served req/s, refused share, SLO
     share, TTFT p99 of the served requests and the client lag p99.
  2. capacity: no queue bound. Measured by a client of its own (raw httpx /generate streams,
     no tuiapp measuring code), before and after the search, on the same workload tuiapp sends
     (its prompts and output lengths, --output-tokens MEAN:SPREAD, built by tuiapp's workload
     module and sent in the same order) and the same kind of arrivals (Poisson): requests sent
     at --overload (2.5) x the closed-loop figure for --capacity-s seconds, above capacity so the queue never
     empties; successful finishes per second over the middle half; the median over --seeds
     arrival draws. Why the spread and the draws: with one output length for every request, a
     server that holds R streams is bistable at saturation (requests admitted together finish
     together and share one prefill; staggered ones each cost a prefill of their own), and which
     state a run falls into depends on its first arrivals: docs/load-curves.md.
     Then `tuiapp attach --find-max-load` from a quarter of it, on that workload; printed: the
     answer, capacity and their ratio.

    python benchmarks/overload.py                                    # the simulator
    python benchmarks/overload.py --target real                      # the real SGLang CPU server
    python benchmarks/overload.py --target real --real-venv /tmp/tuiapp-sglang-cpu/venv
    python benchmarks/overload.py --sim-step-ms 5                    # a faster simulated model
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tuiapp.bench.settings import BenchSettings  # noqa: E402
from tuiapp.bench.workload import build  # noqa: E402
from tuiapp.sim.process import SimProcess, free_port  # noqa: E402

SIM_MODEL = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
SLO = "ttft_ms=2000"


class Server:
    """The simulator or the real CPU server with the given extra flags, stopped on exit."""

    def __init__(self, target: str, extra: list[str], venv: Path | None, log_dir: Path) -> None:
        self.target = target
        if target == "sim":
            self._sim = SimProcess([*SIM_MODEL, *extra])
            self.url = self._sim.url
        else:
            from real_sglang import RealServer

            self._real = RealServer(venv, log_dir / f"real-{len(list(log_dir.iterdir()))}.log", free_port(), *extra)
            self.url = self._real.url

    def __enter__(self) -> Server:
        (self._sim if self.target == "sim" else self._real).wait_ready()
        return self

    def __exit__(self, *exc) -> None:
        (self._sim if self.target == "sim" else self._real).stop()


def workload(output_tokens: int, output_spread: int) -> list[tuple[str, int]]:
    """The prompts and output lengths tuiapp sends with --output-tokens MEAN:SPREAD, in its order."""
    s = BenchSettings(max_new_tokens=output_tokens, output_spread=output_spread)
    return [(p.as_text(), p.max_new_tokens or output_tokens) for p in build(s.workload, seed=s.seed, settings=s)]


def _body(text: str, tokens: int) -> dict:
    return {"text": text, "stream": True, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}


async def _one(http: httpx.AsyncClient, url: str, text: str, tokens: int) -> bool:
    async with http.stream("POST", url + "/generate", json=_body(text, tokens)) as resp:
        got = (await resp.aread()).decode()
    return resp.status_code == 200 and f'"completion_tokens":{tokens}' in got


async def closed_loop_saturation_req_s(url: str, streams: int, requests: int, work: list[tuple[str, int]]) -> float:
    """Closed loop, ``streams`` workers back to back: successful requests over first send to
    last finish. Its own client (raw httpx, no tuiapp code)."""
    left = list(range(requests))
    ok = 0
    first = last = None

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal ok, first, last
        while left:
            i = left.pop()
            sent = time.perf_counter()
            first = sent if first is None else min(first, sent)
            if await _one(http, url, *work[i % len(work)]):
                ok += 1
                last = time.perf_counter()

    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=streams)) as http:
        await _one(http, url, *work[0])  # one warm-up request: the first of a fresh server is slow
        await asyncio.gather(*(worker(http) for _ in range(streams)))
    return ok / (last - first) if ok and last and first and last > first else 0.0


async def poisson_saturation_req_s(url: str, rate_req_s: float, requests: int, work: list[tuple[str, int]],
                                   seed: int) -> float:
    """Poisson arrivals at ``rate_req_s`` (above capacity: the queue never empties), the
    workload in order; successful finishes per second over the middle half of them (the
    steady state, without the start and the drain). Its own client (raw httpx)."""
    import random

    rng = random.Random(seed)
    finishes: list[float] = []

    async def arrive(http: httpx.AsyncClient, delay_s: float, i: int) -> None:
        await asyncio.sleep(delay_s)
        if await _one(http, url, *work[i % len(work)]):
            finishes.append(time.perf_counter())

    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=None)) as http:
        await _one(http, url, *work[0])
        t_s, jobs = 0.0, []
        for i in range(requests):
            jobs.append(arrive(http, t_s, i))
            t_s += rng.expovariate(rate_req_s)
        await asyncio.gather(*jobs)
    finishes.sort()
    lo, hi = len(finishes) // 4, 3 * len(finishes) // 4
    return (hi - lo) / (finishes[hi] - finishes[lo]) if hi > lo and finishes[hi] > finishes[lo] else 0.0


def attach(url: str, summary: Path, *args: str) -> dict:
    argv = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off", "--api", "generate",
            "--warmup", "1", "--summary", str(summary), *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    if not summary.exists():
        sys.exit(f"attach wrote no summary (exit {out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return json.loads(summary.read_text())


def fmt(x: float | None, spec: str = ".1f") -> str:
    return "n/a" if x is None else format(x, spec)


def flood(a: argparse.Namespace, venv: Path | None, tmp: Path, running: list[str], tokens: list[str]) -> None:
    """A server that refuses what it cannot hold, offered --rate."""
    with Server(a.target, [*running, "--max-queued-requests", str(a.max_queued)], venv, tmp) as srv:
        per_run = max(16, round(a.rate))
        data = attach(srv.url, tmp / "flood.json", "--request-rate", f"{a.rate:g}", "--requests-per-run",
                      str(per_run), "--runs", "2", "--slo", SLO, *tokens)
        (p,) = data["points"]
        print(f"flood (--max-queued-requests {a.max_queued}, attach --request-rate {a.rate:g} --requests-per-run"
              f" {per_run} --runs 2 --slo {SLO}):")
        print(f"  offered {fmt(p.get('offered_request_rate'))} req/s, sent {fmt(p.get('sent_request_rate'))} req/s,"
              f" served {fmt(p.get('served_request_rate'))} req/s; {p['requests']} requests, refused share"
              f" {fmt(p.get('refused_share'), '.1%')}, failed by reason {p.get('errors_by_reason')}")
        print(f"  SLO share {fmt(p.get('goodput_share'), '.1%')}, TTFT p99 of the served"
              f" {fmt(p.get('ttft_p99_ms'), '.0f')} ms, client lag p99 {fmt(p.get('client_lag_p99_ms'), '.1f')} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=("sim", "real"), default="sim")
    ap.add_argument("--real-venv", type=Path,
                    default=Path(os.environ.get("TUIAPP_REAL_SGLANG", "/tmp/tuiapp-sglang-cpu/venv")))
    ap.add_argument("--max-running", type=int, default=4)
    ap.add_argument("--max-queued", type=int, default=1)
    ap.add_argument("--rate", type=float, default=200.0, help="the flood's offered rate, req/s")
    ap.add_argument("--output-tokens", type=int, default=16, help="mean output tokens a request")
    ap.add_argument("--output-spread", type=int, default=8,
                    help="output lengths drawn in mean +- spread (0: one length, a bistable capacity)")
    ap.add_argument("--seeds", type=int, default=3, help="arrival draws of the capacity measurement (median)")
    ap.add_argument("--overload", type=float, default=2.5,
                    help="the capacity's arrivals, times the closed-loop figure (well above capacity)")
    ap.add_argument("--sim-step-ms", type=float, help="the simulator's decode step (default: its model's)")
    ap.add_argument("--capacity-s", type=float, default=12.0, help="seconds of arrivals of the sustained capacity")
    ap.add_argument("--probe-runs", type=int, default=3, help="runs a --find-max-load probe makes (tuiapp's default, 3)")
    ap.add_argument("--capacity-only", action="store_true",
                    help="only the capacity measurement (no flood, no search): e.g. with --output-spread 0 --seeds 5")
    ap.add_argument("--probe-requests", type=int, default=0,
                    help="requests a --find-max-load probe sends (default: tuiapp's, 8 s of arrivals)")
    a = ap.parse_args()
    venv = a.real_venv if a.target == "real" else None
    if venv is not None and not (venv / "bin" / "python").exists():
        sys.exit(f"no real SGLang venv at {venv}: run tools/sglang_cpu/setup.sh")
    tokens = ["--output-tokens", f"{a.output_tokens}:{a.output_spread}"]
    work = workload(a.output_tokens, a.output_spread)
    step = ["--sim-step-ms", f"{a.sim_step_ms:g}"] if a.sim_step_ms and a.target == "sim" else []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        print(f"target: {a.target}, --max-running-requests {a.max_running}, output tokens {a.output_tokens}"
              f" +- {a.output_spread} a request")

        running = [*step, "--max-running-requests", str(a.max_running)]
        if not a.capacity_only:
            flood(a, venv, tmp, running, tokens)

        with Server(a.target, running, venv, tmp) as srv:
            streams = 2 * a.max_running
            # measured before and after the search: a shared box's load moves a server's pace
            def measure() -> tuple[float, float]:
                closed = asyncio.run(closed_loop_saturation_req_s(srv.url, streams, 12 * streams, work))
                rate = a.overload * closed
                draws = [asyncio.run(poisson_saturation_req_s(srv.url, rate, round(rate * a.capacity_s), work, seed))
                         for seed in range(a.seeds)]
                opened = sorted(draws)[len(draws) // 2]
                # finishes near the sending rate: the queue emptied, so that is not a capacity
                flag = "" if opened < 0.85 * rate else f" (NOT SATURATED: {rate:.1f} sent; raise --overload)"
                print(f"  capacity: closed loop {closed:.1f}; Poisson at {a.overload:g}x ({rate:.1f} req/s) for"
                      f" {a.capacity_s:g} s, draws {', '.join(f'{d:.1f}' for d in draws)}: median {opened:.1f}"
                      f" req/s{flag}", flush=True)
                return closed, opened

            before = measure()
            if a.capacity_only:
                return
            start = max(1, round(before[1] / 4))
            probe = ["--requests-per-run", str(a.probe_requests)] if a.probe_requests else []
            t0 = time.monotonic()
            data = attach(srv.url, tmp / "search.json", "--request-rate", str(start), "--find-max-load", "--slo", SLO,
                          *probe, "--runs", str(a.probe_runs), *tokens)
            search_s = time.monotonic() - t0
            after = measure()
            capacity = (before[1] + after[1]) / 2
            answer = data.get("max_load") or {}
            found = answer.get("request_rate")
            print(f"capacity (no queue bound), before / after the search: closed loop ({streams} streams)"
                  f" {before[0]:.1f} / {after[0]:.1f} req/s; sustained Poisson ({a.overload:g}x for {a.capacity_s:g} s, median of {a.seeds})"
                  f" {before[1]:.1f} / {after[1]:.1f} req/s")
            print(f"  attach --request-rate {start} --find-max-load --slo {SLO} {' '.join(probe)} --runs {a.probe_runs}"
                  f" ({search_s:.0f} s): {answer.get('text')}")
            for q in data.get("points") or []:  # each probe, and why it passed or failed
                print(f"    probe {fmt(q.get('request_rate'), 'g')} req/s: served {fmt(q.get('served_request_rate'), '.2f')},"
                      f" SLO share {fmt(q.get('goodput_share'), '.0%')} of {q.get('requests')}, TTFT p99"
                      f" {fmt(q.get('ttft_p99_ms'), '.0f')} ms, failed {q.get('errors_by_reason') or 0}")
            ratio = f"{found / capacity:.2f}" if found and capacity else "n/a"
            print(f"  answer / capacity = {ratio}")


if __name__ == "__main__":
    main()
