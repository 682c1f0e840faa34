"""Benchmark fidelity on the REAL SGLang server: tuiapp against an independent client.

    .venv/bin/python benchmarks/real_fidelity.py --venv /tmp/tuiapp-sglang-cpu/venv
        [--pairs 40] [--rounds 4] [--requests 4] [--tokens 128] [--url URL]

Starts real SGLang 0.5.23 on CPU (the venv tools/sglang_cpu/setup.sh made; or --url of one
running) and measures, in one run, /generate streams (temperature 0, ignore_eos, the reference
prompts, concurrency 1) with two interleavings:

A. per request: one request through tuiapp's own client (make_client + stream_request: the lean
   transport, SSE split and token count the loop uses), one through an independent stdlib client
   (http.client, its own SSE split, JSON), alternating which goes first, ``--pairs`` times;
B. the whole product: rounds of ``tuiapp attach --headless`` (a subprocess, pollers on, one
   warm-up) and of the independent client (one warm-up too), ``--requests`` each, order
   alternating; AIPerf 0.13.0 joins on /v1/chat/completions when its venv exists
   (benchmarks/bench_peers.py).

Same definitions everywhere (docs/attach.md "Metric definitions"): TTFT = first output chunk - send;
decode tok/s = (N - 1) / (last output chunk - first); ITL = its inverse; N = the server's
completion_tokens. Printed: tuiapp / independent as the ratio of means, of medians, and the
median of the per-pair ratios. Target: decode within 2%, TTFT within 5%.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

from real_sglang import RealServer  # noqa: E402

from tuiapp.bench.workload import REFERENCE_PROMPTS  # noqa: E402
from tuiapp.server.ports import free_port  # noqa: E402

_CONNS: dict[str, http.client.HTTPConnection] = {}


def independent_request(url: str, prompt: str, tokens: int) -> dict:
    """One streamed /generate request with nothing but the standard library, on a kept-alive
    connection (as tuiapp's client and every benchmark client keep theirs)."""
    u = urlsplit(url)
    body = json.dumps({"text": prompt, "sampling_params": {"temperature": 0.0, "max_new_tokens": tokens,
                                                           "ignore_eos": True}, "stream": True}).encode()
    for attempt in (0, 1):
        conn = _CONNS.get(url)
        if conn is None:
            conn = _CONNS[url] = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        t_send = time.perf_counter()
        try:
            conn.request("POST", "/generate", body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            break
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            conn.close()  # the server closed the idle connection: a new one, timed afresh
            del _CONNS[url]
            if attempt:
                raise
    first = last = None
    final = None
    for raw in resp:
        if not raw.startswith(b"data: ") or raw.startswith(b"data: [DONE]"):
            continue
        now = time.perf_counter()
        first = now if first is None else first
        last = now
        final = raw
    resp.read()  # the chunked body's end, so the connection can carry the next request
    n = json.loads(final[6:])["meta_info"]["completion_tokens"]
    decode_s = last - first
    return {"ttft_s": first - t_send, "decode_tok_s": (n - 1) / decode_s, "tpot_s": decode_s / (n - 1), "n": n}


async def paired(url: str, pairs: int, tokens: int) -> list[dict]:
    """Phase A: one tuiapp request (its own client: lean transport, SSE split, token count),
    one independent request, alternating which goes first, so both see the same load."""
    import asyncio

    from tuiapp.bench.client import build_payload, stream_request
    from tuiapp.bench.http_client import make_client
    from tuiapp.bench.settings import BenchSettings
    from tuiapp.bench.workload import Prompt

    settings = BenchSettings(max_new_tokens=tokens)
    out = []
    async with make_client(settings.timeouts, api_key=None, concurrency=1) as client:
        for i in range(pairs):
            prompt = REFERENCE_PROMPTS[i % len(REFERENCE_PROMPTS)]
            payload = build_payload("generate", Prompt(text=prompt), settings, None)
            row = {}
            for who in (("tuiapp", "independent") if i % 2 == 0 else ("independent", "tuiapp")):
                if who == "tuiapp":
                    r = await stream_request(client, url + "/generate", "generate", payload, settings.timeouts)
                    assert r.ok, r.error
                    row[who] = {"ttft_s": r.ttft_s, "decode_tok_s": r.decode_tok_s, "tpot_s": r.tpot_s}
                else:
                    row[who] = await asyncio.to_thread(independent_request, url, prompt, tokens)
            out.append(row)
    return out


def report(rows: list[dict], names: list[str]) -> None:
    combos = [(ours, other) for ours in names if ours.startswith("tuiapp")
              for other in names if not other.startswith("tuiapp")]
    for mine, other in combos:
        pairs = [r for r in rows if r.get(other) is not None and r.get(mine) is not None]
        if not pairs:
            continue
        print(f"  {mine} / {other} over {len(pairs)} pairs:")
        for key, label in (("decode_tok_s", "decode tok/s"), ("ttft_s", "TTFT"), ("tpot_s", "ITL")):
            ours = statistics.fmean(r[mine][key] for r in pairs)
            theirs = statistics.fmean(r[other][key] for r in pairs)
            med = statistics.median(r[mine][key] / r[other][key] for r in pairs)
            m_ours = statistics.median(r[mine][key] for r in pairs)
            m_theirs = statistics.median(r[other][key] for r in pairs)
            print(f"    {label:13s} means {ours:.4g} vs {theirs:.4g} (ratio {ours / theirs:.4f}); medians {m_ours:.4g} vs "
                  f"{m_theirs:.4g} (ratio {m_ours / m_theirs:.4f}); median of pair ratios {med:.4f}")


def run_independent(url: str, requests: int, tokens: int, offset: int) -> dict:
    # one uncounted warm-up, as tuiapp's --warmup 1: with --sleep-on-idle the first request
    # after a pause pays the scheduler's wake-up, and each round starts after one
    independent_request(url, REFERENCE_PROMPTS[0], 32)
    res = [independent_request(url, REFERENCE_PROMPTS[(offset + i) % len(REFERENCE_PROMPTS)], tokens)
           for i in range(requests)]
    return {k: statistics.fmean(r[k] for r in res) for k in ("ttft_s", "decode_tok_s", "tpot_s")}


def run_tuiapp(url: str, requests: int, tokens: int, out: Path, pollers: bool = True) -> dict:
    summary = out / "summary.json"
    extra = [] if pollers else ["--metrics-interval", "100000"]  # /metrics and /server_info once only
    cmd = [sys.executable, "-m", "tuiapp.cli", "attach", url, "--headless", "--telemetry", "off",
           "--runs", str(requests), "--warmup", "1", "--no-flush-cache", "--max-new-tokens", str(tokens),
           "--summary", str(summary), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"tuiapp attach failed ({proc.returncode}): {proc.stderr[-800:]} {proc.stdout[-800:]}")
    runs = json.loads(summary.read_text())["runs"]
    return {k: statistics.fmean(r[k] for r in runs) for k in ("ttft_s", "decode_tok_s", "tpot_s")}


def run_aiperf_round(url: str, requests: int, tokens: int, out: Path, model: str) -> dict | None:
    import bench_peers

    bench_peers.MODEL = model
    res = bench_peers.run_aiperf(url, out / "aiperf", concurrency=1, requests=requests, output_tokens=tokens)
    if res is None or not res.ok:
        return None
    r = res.result
    tpot_s = r["inter_token_latency"]["avg"] / 1000.0
    return {"ttft_s": r["time_to_first_token"]["avg"] / 1000.0, "decode_tok_s": r["output_token_throughput_per_user"]["avg"],
            "tpot_s": tpot_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", type=Path, help="the venv tools/sglang_cpu/setup.sh made (its model beside it)")
    ap.add_argument("--url", help="a real server already running (instead of --venv)")
    ap.add_argument("--pairs", type=int, default=40, help="phase A: interleaved request pairs")
    ap.add_argument("--rounds", type=int, default=4, help="phase B: rounds of tuiapp attach and the others")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    args = ap.parse_args()
    if not args.url and not args.venv:
        ap.error("--venv or --url")
    tmp = Path(tempfile.mkdtemp(prefix="real-fidelity-"))
    server = None
    if not args.url:
        server = RealServer(args.venv, tmp / "server.log", free_port())
    try:
        if server is not None:
            server.wait_ready()
        url = args.url or server.url
        import httpx

        model = httpx.get(url + "/v1/models", timeout=10).json()["data"][0]["id"]
        run_independent(url, args.requests, 32, 0)  # warm up: the first requests are slower, and fill the prefix cache
        tools = {"tuiapp": lambda i: run_tuiapp(url, args.requests, args.tokens, tmp),
                 "tuiapp-no-pollers": lambda i: run_tuiapp(url, args.requests, args.tokens, tmp, pollers=False),
                 "independent": lambda i: run_independent(url, args.requests, args.tokens, 0)}
        aiperf_note = "aiperf: not installed (benchmarks/bench_peers.py AIPERF_VENV), skipped"
        if (Path(__import__("bench_peers").AIPERF_VENV) / "bin" / "aiperf").exists():
            tools["aiperf(chat)"] = lambda i: run_aiperf_round(url, args.requests, args.tokens, tmp, model)
            aiperf_note = ""
        import asyncio

        print(f"real SGLang at {url}; /generate, {args.tokens} tokens, concurrency 1, greedy, ignore_eos")
        print(f"A. per request, interleaved: tuiapp's client in-process vs the stdlib client, {args.pairs} pairs")
        rows_a = asyncio.run(paired(url, args.pairs, args.tokens))
        report(rows_a, ["tuiapp", "independent"])
        rows: list[dict[str, dict]] = []
        names = list(tools)
        print(f"B. the whole product (tuiapp attach --headless, pollers on) vs the others, interleaved by rounds "
              f"of {args.requests} requests, {args.rounds} rounds")
        for i in range(args.rounds):
            order = names if i % 2 == 0 else names[::-1]
            row = {}
            for name in order:
                row[name] = tools[name](i)
            rows.append(row)
            print(f"  round {i}: " + "  ".join(
                f"{n}: {r['decode_tok_s']:.1f} tok/s ttft {r['ttft_s'] * 1000:.1f} ms itl {r['tpot_s'] * 1000:.2f} ms"
                for n, r in row.items() if r is not None))
        if aiperf_note:
            print("  " + aiperf_note)
        report(rows, names)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
