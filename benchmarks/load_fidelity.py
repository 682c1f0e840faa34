"""Load-curve fidelity: tuiapp's per-point figures against an independent open-loop client.

    .venv/bin/python benchmarks/load_fidelity.py --target sim
    .venv/bin/python benchmarks/load_fidelity.py --target real --venv /tmp/tuiapp-sglang-cpu/venv
        [--concurrency 1,4,16] [--rates 2,4] [--runs 2] [--tokens 32] [--url URL]

At every load point, interleaved run by run (the order alternates run by run and point by
point, so drift on a shared box falls on both alike): one run of
``tuiapp attach URL --headless --sweep KIND=V --runs 1 --record F`` (a subprocess, as a user
runs it), and one run of the independent client of this file (stdlib asyncio, raw HTTP/1.1
with its own chunked-transfer and SSE parsing, its own Poisson arrivals), each with a fresh
connection pool and one warm-up request, the same workload: /generate streams of the reference
prompts, ``--tokens`` output tokens (ignore_eos), no cache flush. Before the first point both
clients run one discarded round (the server's own warm-up). Both pool a point's runs alike:

    aggregate output tok/s = completion tokens / sum of run wall times (first send to last finish)
    TTFT p50 = median over the point's requests of (first output chunk - send)

Printed per point: both figures of both clients and tuiapp / independent; target: within 5%.
Under it, the difference of the clients' per-run means with its 95% interval (Welch), which
says how far the box's run-to-run noise lets this many runs settle the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

from tuiapp.bench.workload import build  # noqa: E402

# The same workload as tuiapp's loop: its prompt order (seed 0), and its arrival draws
# (seed 0, run r: gamma of shape 1), so both clients send the same requests at the same
# moments and only the measuring differs.
PROMPTS = [p.text for p in build("reference")]

TARGET_PCT = 5.0


async def _read_chunked(reader: asyncio.StreamReader):
    """The body of a chunked response, chunk by chunk (uvicorn streams that way)."""
    while True:
        size_line = await reader.readline()
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


_SO_TIMESTAMPNS = 35  # Linux: each read's ancillary data carries its newest packet's arrival
_SCM_TIMESTAMPNS = _SO_TIMESTAMPNS
_TIMESPEC = struct.Struct("@qq")
_ANC = socket.CMSG_SPACE(_TIMESPEC.size)


class _Conn:
    """One keep-alive connection on a non-blocking socket read from the event loop's selector.
    Each piece is stamped with the kernel's arrival time of its newest packet (SO_TIMESTAMPNS,
    CLOCK_REALTIME), else the wall clock when read, before any parsing: a stamp taken after a
    coroutine has parsed a line carries the event loop's backlog and the VM's wake-up latency,
    which read the real server's TTFT p50 5-25% above tuiapp's (kernel-stamped) figure."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pieces: deque[tuple[float, bytes]] = deque()
        self.closed = False
        self._waiter: asyncio.Future | None = None
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        except OSError:
            pass
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(65536, _ANC)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, anc = b"", []
        if not data:
            self.close()
            return
        now = time.time()
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == _SCM_TIMESTAMPNS and len(raw) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(raw)
                now = sec + nsec / 1e9
        self.pieces.append((now, data))
        self._wake()

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)  # a request is small: the socket's buffer takes it at once

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._loop.remove_reader(self.sock.fileno())
            self.sock.close()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def piece(self) -> tuple[float, bytes] | None:
        while not self.pieces:
            if self.closed:
                return None
            self._waiter = self._loop.create_future()
            await self._waiter
        return self.pieces.popleft()


_IDLE: list[_Conn] = []  # keep-alive, as tuiapp's client keeps


async def _connect(host: str, port: int) -> _Conn:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return _Conn(sock)


SEND_COST_S = 0.0  # --independent-send-cost-ms: CPU work before each send, as a heavier client's


async def one_request(host: str, port: int, prompt: str, tokens: int, fresh: bool = False) -> dict:
    if SEND_COST_S:
        t = time.perf_counter()
        while time.perf_counter() - t < SEND_COST_S:  # busy, as a client building a request is
            pass
    body = json.dumps({"text": prompt, "stream": True, "sampling_params": {
        "max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}).encode()
    data = (b"POST /generate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (host.encode(), len(body)) + body)
    while _IDLE and _IDLE[-1].closed:  # the server closed it while it was idle
        _IDLE.pop()
    reused = bool(_IDLE) and not fresh
    conn = _IDLE.pop() if reused else await _connect(host, port)
    t0 = time.time()  # when the bytes leave, as tuiapp counts (the stamps' clock: CLOCK_REALTIME)
    try:
        conn.write(data)
    except OSError:
        conn.close()
        if reused:  # closed under us between the check and the send: once more on a fresh one
            return await one_request(host, port, prompt, tokens, fresh=True)
        return {"ok": False}
    raw = bytearray()
    while b"\r\n\r\n" not in raw:
        got = await conn.piece()
        if got is None:
            if reused and not raw:  # a kept connection the server had closed: once more on a fresh one
                return await one_request(host, port, prompt, tokens, fresh=True)
            return {"ok": False}
        stamp, piece = got
        raw += piece
    head, _, rest = bytes(raw).partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {}
    for line in lines:
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    if b" 200 " not in status:
        conn.close()
        return {"ok": False}
    chunked = headers.get("transfer-encoding") == "chunked"
    body_buf, sse, ttft, n, last, done = bytearray(rest), b"", None, None, None, False
    server: dict = {}
    while True:
        # everything complete in what has arrived so far carries the stamp of the piece that completed it
        events: list[bytes] = []
        if chunked:
            while True:
                eol = body_buf.find(b"\r\n")
                if eol < 0:
                    break
                size = int(bytes(body_buf[:eol]).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    done = body_buf.find(b"\r\n", eol + 2) >= 0
                    break
                if len(body_buf) < eol + 2 + size + 2:
                    break
                events.append(bytes(body_buf[eol + 2:eol + 2 + size]))
                del body_buf[:eol + 2 + size + 2]
        else:
            events.append(bytes(body_buf))
            body_buf.clear()
        for chunk in events:
            sse += chunk
            while b"\n" in sse:
                line, sse = sse.split(b"\n", 1)
                line = line.strip()
                if not line.startswith(b"data: ") or line == b"data: [DONE]":
                    continue
                meta = json.loads(line[6:]).get("meta_info") or {}
                n = meta.get("completion_tokens", n)
                if ttft is None and n:
                    ttft = stamp - t0
                    # SGLang's own stamps (wall clock, as ours), for real_ttft_parts.py
                    server["sent_ts"] = meta.get("response_sent_to_client_ts")
                if "request_received_ts" in meta:
                    server["received_ts"] = meta["request_received_ts"]
                last = stamp
        if done:
            break
        got = await conn.piece()
        if got is None:
            break
        stamp, piece = got
        body_buf += piece
    if done and headers.get("connection", "").lower() != "close":
        _IDLE.append(conn)
    else:
        conn.close()
    return {"ok": ttft is not None and n is not None, "ttft_s": ttft, "tokens": n or 0, "end_s": last, "t0": t0,
            **server}


async def poll_metrics(host: str, port: int, every_s: float) -> None:
    """GET /metrics every ``every_s``, as tuiapp's poller does while it measures: on a CPU-bound
    server the scrape is work the server does, so both clients should ask it of the server."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while True:
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n" % host.encode())
            await writer.drain()
            await reader.readline()
            headers = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            if headers.get("transfer-encoding") == "chunked":
                async for _ in _read_chunked(reader):
                    pass
            else:
                await reader.readexactly(int(headers.get("content-length", "0")))
            await asyncio.sleep(every_s - time.monotonic() % every_s)  # on a grid, as tuiapp's ticks
    finally:
        writer.close()


async def independent_run(url: str, *, concurrency: int | None, rate: float | None, requests: int, tokens: int,
                          seed: int, offset: int) -> tuple[list[dict], float]:
    u = urlsplit(url)
    return await _independent_run(u.hostname, u.port, concurrency=concurrency, rate=rate, requests=requests,
                                  tokens=tokens, seed=seed, offset=offset)


async def _independent_run(host: str, port: int, *, concurrency: int | None, rate: float | None, requests: int,
                           tokens: int, seed: int, offset: int) -> tuple[list[dict], float]:
    prompts = [PROMPTS[(offset + i) % len(PROMPTS)] for i in range(requests)]
    t_start = time.perf_counter()
    if rate is None:
        queue = iter(prompts)
        results: list[dict] = []

        async def worker() -> None:
            for p in queue:
                results.append(await one_request(host, port, p, tokens))

        await asyncio.gather(*(worker() for _ in range(min(concurrency or 1, requests))))
    else:
        rng = random.Random(seed)
        tasks, due = [], time.perf_counter()
        for p in prompts:
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.ensure_future(one_request(host, port, p, tokens)))
            due += rng.gammavariate(1.0, 1.0 / rate)
        results = list(await asyncio.gather(*tasks))
    return results, time.perf_counter() - t_start


def independent_one(url: str, *, concurrency: int | None, rate: float | None, requests: int,
                    tokens: int, metrics_every_s: float = 0.0) -> tuple[list[dict], float]:
    """One run on its own event loop and connections, after one warm-up request, as tuiapp does;
    the /metrics scrapes start before the warm-up, as tuiapp's session's poller does (its first
    scrape at once): a first scrape at the run's start fell on the first burst of 16 streams,
    whose TTFT p50 it raised from ~48 to ~80 ms on the real CPU server (the server took the
    requests 4-6 ms later on average, while tuiapp's, and this client's without scrapes, agreed)."""
    async def whole() -> tuple[list[dict], float]:
        _IDLE.clear()
        u = urlsplit(url)
        poller = asyncio.ensure_future(poll_metrics(u.hostname, u.port, metrics_every_s)) if metrics_every_s > 0 else None
        try:
            await one_request(u.hostname, u.port, PROMPTS[0], min(tokens, 32))  # warm-up
            return await independent_run(url, concurrency=concurrency, rate=rate, requests=requests,
                                         tokens=tokens, seed=0, offset=1)
        finally:
            if poller is not None:
                poller.cancel()
                with contextlib.suppress(BaseException):
                    await poller
            for conn in _IDLE:
                conn.close()

    reqs, wall = asyncio.run(whole())
    return [{"ok": x["ok"], "ttft_s": x.get("ttft_s"), "tokens": x.get("tokens", 0)} for x in reqs], wall


def tuiapp_one(url: str, *, kind: str, value: float, requests: int, tokens: int, out: Path,
               extra: list[str] = ()) -> tuple[list[dict], float]:
    """One run of ``tuiapp attach`` (its run 0: prompts 1.., arrival seed 0, as the independent
    client's); the requests and the run's wall time from its recording."""
    record = out / "run.jsonl"
    cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off",
           "--sweep", f"{kind}={value:g}", "--runs", "1", "--requests-per-run", str(requests),
           "--max-new-tokens", str(tokens), "--no-flush-cache", "--warmup", "1", "--record", str(record), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"tuiapp attach failed: {proc.stderr[-500:]}")
    reqs, wall = [], None
    for line in record.read_text().splitlines():
        ev = json.loads(line)
        if ev.get("kind") == "request":
            reqs.append({"ok": ev["ok"], "ttft_s": ev["ttft_s"], "tokens": ev["completion_tokens"] or 0})
        elif ev.get("kind") == "run":
            wall = ev["duration_s"]
    if wall is None:
        raise RuntimeError("tuiapp attach recorded no run")
    return reqs, wall


def pooled(runs: list[tuple[list[dict], float]]) -> dict:
    good = [x for reqs, _ in runs for x in reqs if x["ok"] and x["ttft_s"] is not None]
    wall = sum(w for _, w in runs)
    return {"output_tok_s": sum(x["tokens"] for x in good) / wall,
            "ttft_p50_ms": statistics.median(x["ttft_s"] for x in good) * 1000,
            "errors": sum(len(reqs) for reqs, _ in runs) - len(good),
            "run_tok_s": [sum(x["tokens"] for x in reqs if x["ok"]) / w for reqs, w in runs],
            "run_ttft_ms": [statistics.median(x["ttft_s"] for x in reqs if x["ok"] and x["ttft_s"] is not None) * 1000
                            for reqs, _ in runs]}


def diff_ci_pct(ours: list[float], theirs: list[float]) -> str:
    """mean(ours) - mean(theirs) over the runs, as % of mean(theirs), with its 95% interval
    (Welch): how far the box's run-to-run noise lets the runs settle the difference."""
    if len(ours) < 2 or len(theirs) < 2:
        return "n/a"
    from tuiapp.common.stats import sd, t_quantile

    m_o, m_t = statistics.fmean(ours), statistics.fmean(theirs)
    va, vb = sd(ours) ** 2 / len(ours), sd(theirs) ** 2 / len(theirs)
    se = (va + vb) ** 0.5
    if se == 0:
        return f"{100 * (m_o / m_t - 1):+.1f}%"
    dof = (va + vb) ** 2 / (va * va / (len(ours) - 1) + vb * vb / (len(theirs) - 1))
    half = t_quantile(0.975, dof) * se
    d = m_o - m_t
    return f"{100 * d / m_t:+.1f}% [{100 * (d - half) / m_t:+.1f}, {100 * (d + half) / m_t:+.1f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=["sim", "real"], default="sim")
    ap.add_argument("--venv", default="/tmp/tuiapp-sglang-cpu/venv")
    ap.add_argument("--url", help="a server already running (else one is started)")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--rates", default="2,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--requests-per-concurrency", type=int, default=4, help="requests a run = this x concurrency")
    ap.add_argument("--rate-seconds", type=float, default=8.0, help="an open-loop run is rate x this requests")
    ap.add_argument("--pin", choices=["auto", "off"], default="auto",
                    help="real target: the server on the upper half of the CPUs, both clients on the rest")
    ap.add_argument("--metrics-every-s", type=float, default=1.0,
                    help="the independent client scrapes /metrics this often, as tuiapp's poller does (0: never)")
    ap.add_argument("--independent-send-cost-ms", type=float, default=0.0,
                    help="busy-wait this long before each of the independent client's sends (what"
                         " tuiapp's per-request work does to a burst's spread)")
    ap.add_argument("--tuiapp-args", default="", help="more options for tuiapp attach (a diagnosis)")
    args = ap.parse_args()
    global SEND_COST_S
    SEND_COST_S = args.independent_send_cost_ms / 1000
    server = None
    out = Path(tempfile.mkdtemp(prefix="load_fidelity_"))
    if args.url:
        url = args.url
    elif args.target == "sim":
        from bench_peers import start_sim

        server = start_sim(["--tp", "8"])
        url = server.url
    else:
        from real_sglang import RealServer

        from tuiapp.server.ports import free_port

        cpus = sorted(os.sched_getaffinity(0))
        server_cpus = cpus[len(cpus) // 2:] if args.pin == "auto" and len(cpus) >= 2 else None
        if server_cpus:
            # A CPU-bound server and a client on the same cores measure each other's CPU use:
            # tuiapp (a whole process) takes more than the stdlib client, and the server's
            # TTFT moved by milliseconds with it. Apart, only the measuring differs.
            os.sched_setaffinity(0, cpus[:len(cpus) // 2])  # tuiapp's subprocess inherits it
            print(f"pinned: server on CPUs {server_cpus}, clients on {cpus[:len(cpus) // 2]}", flush=True)
        server = RealServer(Path(args.venv), out / "real.log", free_port(), cpus=server_cpus)
        server.wait_ready()
        url = server.url
    points = [("concurrency", float(c)) for c in args.concurrency.split(",") if c] + \
             [("request_rate", float(r)) for r in args.rates.split(",") if r]
    worst = 0.0
    try:
        print(f"target: {args.target} ({url}); {args.runs} runs per point, {args.tokens} output tokens, "
              "reference prompts, /generate", flush=True)

        def one(who: str, kind: str, value: float) -> tuple[list[dict], float]:
            conc = int(value) if kind == "concurrency" else None
            rate = value if kind == "request_rate" else None
            requests = conc * args.requests_per_concurrency if conc else max(8, round(value * args.rate_seconds))
            if who == "tuiapp":
                return tuiapp_one(url, kind=kind.replace("_", "-"), value=value, requests=requests,
                                  tokens=args.tokens, out=out, extra=args.tuiapp_args.split())
            return independent_one(url, concurrency=conc, rate=rate, requests=requests, tokens=args.tokens,
                                   metrics_every_s=args.metrics_every_s)

        for who in ("tuiapp", "independent"):  # the server's warm-up, not counted
            one(who, *points[0])
        print(f"{'point':>14s} {'client':>12s} {'output tok/s':>13s} {'TTFT p50 ms':>12s}  runs' tok/s", flush=True)
        for k, (kind, value) in enumerate(points):
            runs: dict[str, list] = {"tuiapp": [], "independent": []}
            for r in range(args.runs):
                order = ["tuiapp", "independent"] if (k + r) % 2 == 0 else ["independent", "tuiapp"]
                for who in order:
                    runs[who].append(one(who, kind, value))
            got = {who: pooled(v) for who, v in runs.items()}
            label = f"c={int(value)}" if kind == "concurrency" else f"{value:g} req/s"
            for who in ("tuiapp", "independent"):
                g = got[who]
                print(f"{label:>14s} {who:>12s} {g['output_tok_s']:13.1f} {g['ttft_p50_ms']:12.1f}  "
                      + " ".join(f"{x:.0f}" for x in g["run_tok_s"])
                      + (f"  errors={g['errors']}" if g["errors"] else ""), flush=True)
            d_out = 100 * (got["tuiapp"]["output_tok_s"] / got["independent"]["output_tok_s"] - 1)
            d_ttft = 100 * (got["tuiapp"]["ttft_p50_ms"] / got["independent"]["ttft_p50_ms"] - 1)
            worst = max(worst, abs(d_out), abs(d_ttft))
            ok = "ok" if max(abs(d_out), abs(d_ttft)) <= TARGET_PCT else "OVER"
            print(f"{label:>14s} {'tuiapp/ind.':>12s} {d_out:+12.1f}% {d_ttft:+11.1f}%  {ok}", flush=True)
            print(f"{label:>14s} {'per-run means':>12s}  tok/s {diff_ci_pct(got['tuiapp']['run_tok_s'], got['independent']['run_tok_s'])}"
                  f"  TTFT p50 {diff_ci_pct(got['tuiapp']['run_ttft_ms'], got['independent']['run_ttft_ms'])}"
                  "  (95% interval)", flush=True)
    finally:
        if server is not None:
            server.stop()
    print(f"worst difference: {worst:.1f}% (target {TARGET_PCT:.0f}%)")
    return 0 if worst <= TARGET_PCT else 1


if __name__ == "__main__":
    sys.exit(main())
