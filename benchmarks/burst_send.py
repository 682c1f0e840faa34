"""How a client sends a closed-loop burst: the spread the server sees, tuiapp against the
independent client of load_fidelity.py.

    .venv/bin/python benchmarks/burst_send.py [--concurrency 16] [--rounds 40] [--repeats 3]

A closed loop of C streams whose responses end together (as a batching server ends them)
sends C requests at once; a client's per-request work between reading one response's end and
sending the next spreads that burst, and TTFT counts from each request's own send, so the part
of the server's queue a late request spends inside the client is not in its TTFT. A test
server (tuiapp.sim.testserver's FakeSGLang, in its own process, on its own CPU where there
are two) holds every /generate request until C are waiting, then answers all C at once
(``--tokens`` output tokens, ``--step-ms`` apart; the first at once). Per full round it stamps each request's arrival (perf_counter, one clock
across processes on Linux) and prints:

    lag    = first arrival of the next round - its streams' last token (the client's turnaround)
    spread = last arrival - first arrival of a round     (the burst the server sees)

medians over the rounds of ``--repeats`` runs of each client, interleaved. The clients: ``tuiapp
attach URL --headless --concurrency C --record F`` (a subprocess, as a user runs it, with
its metrics poller) and load_fidelity.py's stdlib client (scraping /metrics once a second too).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

SERVER = r"""
import asyncio, json, sys, time
import orjson
from tuiapp.sim.testserver import FakeSGLang

gather, port, step_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

class Gathering(FakeSGLang):
    def __post_init__(self):
        super().__post_init__()
        self.rounds = []          # [release_s, [arrival_s...]] of full rounds
        self._waiting = []
        self._go = asyncio.Event()

    async def _handle(self, req, conn):
        if req.path == "/burst_stats":
            return conn.respond(200, orjson.dumps(self.rounds))
        if req.path == "/burst_reset":
            self.rounds.clear()
            return conn.respond(200, b"{}")
        return await super()._handle(req, conn)

    async def _stream(self, path, req, conn, cut=None):
        self._waiting.append(time.perf_counter())
        go = self._go
        if len(self._waiting) >= gather:
            self.rounds.append([time.perf_counter(), self._waiting])
            self._waiting, self._go = [], asyncio.Event()
            go.set()
        else:
            try:
                await asyncio.wait_for(go.wait(), 0.5)  # a warm-up or a run's tail: not a full round
            except asyncio.TimeoutError:
                if self._go is go:
                    self._waiting, self._go = [], asyncio.Event()
                    go.set()
        return await super()._stream(path, req, conn, cut)

async def main():
    srv = Gathering(prefill_s=0.0, step_s=step_s)
    await srv.start(port=port)
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def rounds_stats(rounds: list, last_token_s: float) -> tuple[list[float], list[float]]:
    """lag (next round's first arrival - this round's last token) and spread, in ms."""
    lags, spreads = [], []
    for (release_s, _), (_, nxt) in zip(rounds, rounds[1:], strict=False):
        if min(nxt) > release_s:
            lags.append(1000 * (min(nxt) - release_s - last_token_s))
    for _, arrivals in rounds:
        spreads.append(1000 * (max(arrivals) - min(arrivals)))
    return lags, spreads


def main() -> int:
    from load_fidelity import independent_one

    from tuiapp.server.ports import free_port

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=40, help="full rounds a run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=2, help="output tokens a request")
    ap.add_argument("--step-ms", type=float, default=1.0, help="between two tokens of a stream")
    args = ap.parse_args()
    c = args.concurrency
    cpus = sorted(os.sched_getaffinity(0))
    server_cmd = [sys.executable, "-c", SERVER, str(c), str(port := free_port()), str(args.step_ms / 1000)]
    if len(cpus) >= 2:
        server_cmd = ["taskset", "-c", str(cpus[-1]), *server_cmd]
        os.sched_setaffinity(0, cpus[:-1])  # the clients (and tuiapp's subprocess) on the rest
    proc = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    proc.stdout.readline()
    url = f"http://127.0.0.1:{port}"
    out = Path(tempfile.mkdtemp(prefix="burst_send_"))
    requests = c * (args.rounds + 1)
    got: dict[str, tuple[list, list]] = {"tuiapp": ([], []), "independent": ([], [])}
    try:
        def run(who: str) -> None:
            httpx.get(url + "/burst_reset")
            if who == "tuiapp":
                cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off",
                       "--concurrency", str(c), "--runs", "1", "--requests-per-run", str(requests),
                       "--max-new-tokens", str(args.tokens), "--no-flush-cache", "--warmup", "1",
                       "--record", str(out / "run.jsonl")]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    raise RuntimeError(f"tuiapp attach failed: {p.stderr[-500:]}")
            else:
                independent_one(url, concurrency=c, rate=None, requests=requests, tokens=args.tokens, metrics_every_s=1.0)
            lags, spreads = rounds_stats(httpx.get(url + "/burst_stats").json(), (args.tokens - 1) * args.step_ms / 1000)
            got[who][0].extend(lags)
            got[who][1].extend(spreads)

        for r in range(args.repeats):
            for who in (("tuiapp", "independent") if r % 2 == 0 else ("independent", "tuiapp")):
                run(who)
        print(f"concurrency {c}, {args.tokens} tokens {args.step_ms:g} ms apart, {args.rounds} rounds x {args.repeats} runs each (medians; p90 in brackets)")
        print(f"{'client':>12s} {'lag ms':>14s} {'spread ms':>16s} {'per send us':>12s}")
        for who, (lags, spreads) in got.items():
            q = lambda xs: (statistics.median(xs), statistics.quantiles(xs, n=10)[-1])  # noqa: E731
            (lm, l90), (sm, s90) = q(lags), q(spreads)
            print(f"{who:>12s} {lm:7.2f} [{l90:5.2f}] {sm:8.2f} [{s90:5.2f}] {1000 * sm / max(c - 1, 1):12.0f}")
    finally:
        proc.terminate()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
