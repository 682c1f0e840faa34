"""tuiapp against SGLang's own client, ``python -m sglang.bench_serving``, on the real SGLang CPU
server: aggregate output tok/s and TTFT p50 at one closed-loop point, interleaved run by run.

    .venv/bin/python benchmarks/real_vs_bench_serving.py [--venv /tmp/tuiapp-sglang-cpu/venv]
        [--concurrency 16] [--runs 4]

Both clients send the same prompts: the reference prompts written as a ShareGPT file, cycled
to 144 conversations (bench_serving sends no more requests than its dataset has), each run 8 x
C requests of 32 output tokens (bench_serving: ``--sharegpt-output-len 32``, ignore_eos by
default; tuiapp: ``--prompts FILE --max-new-tokens 32``), one warm-up request each, after one
discarded round of both. bench_serving's figures are its own ``output_throughput`` and
``median_ttft_ms``; tuiapp's are its run's output tok/s and its requests' median TTFT.
Printed: the mean over runs of each client's output tok/s and the median over runs of its
TTFT p50, and tuiapp / bench_serving. bench_serving reads TTFT when its aiohttp loop has parsed
the first chunk; tuiapp from the kernel's arrival stamp (docs/load-curves.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tuiapp.bench.workload import build  # noqa: E402


def main() -> int:
    from real_sglang import RealServer

    from tuiapp.server.ports import free_port

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/tuiapp-sglang-cpu/venv")
    ap.add_argument("--model", default=None, help="the tokenizer bench_serving reads (default: the venv's model beside it)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    venv = Path(args.venv)
    model = args.model or str(venv.parent / "model")
    c, n = args.concurrency, 8 * args.concurrency
    out = Path(tempfile.mkdtemp(prefix="real_vs_bench_serving_"))
    prompts = [p.text for p in build("reference")]
    convs = [{"id": str(i), "conversations": [{"from": "human", "value": prompts[i % len(prompts)]},
                                              {"from": "gpt", "value": "ok " * 32}]} for i in range(max(144, n))]
    dataset = out / "reference_sharegpt.json"
    dataset.write_text(json.dumps(convs))
    cpus = sorted(os.sched_getaffinity(0))
    server_cpus = cpus[len(cpus) // 2:] if len(cpus) >= 2 else None
    if server_cpus:
        os.sched_setaffinity(0, cpus[:len(cpus) // 2])  # the clients apart from the server, as load_fidelity.py
    server = RealServer(venv, out / "real.log", free_port(), cpus=server_cpus)
    server.wait_ready()

    def bench_serving() -> tuple[float, float]:
        result = out / "bench_serving.jsonl"
        result.unlink(missing_ok=True)
        cmd = [str(venv / "bin" / "python"), "-m", "sglang.bench_serving", "--backend", "sglang",
               "--base-url", server.url, "--dataset-name", "sharegpt", "--dataset-path", str(dataset),
               "--sharegpt-output-len", "32", "--num-prompts", str(n), "--max-concurrency", str(c),
               "--request-rate", "inf", "--tokenizer", model, "--output-file", str(result),
               "--disable-tqdm", "--warmup-requests", "1"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"bench_serving failed: {p.stderr[-800:]}")
        r = json.loads(result.read_text().splitlines()[-1])
        if r["completed"] != n:
            raise SystemExit(f"bench_serving completed {r['completed']} of {n} requests")
        return r["output_throughput"], r["median_ttft_ms"]

    def tuiapp() -> tuple[float, float]:
        record = out / "tuiapp.jsonl"
        cmd = [sys.executable, "-m", "tuiapp", "attach", server.url, "--headless", "--telemetry", "off",
               "--sweep", f"concurrency={c}", "--runs", "1", "--requests-per-run", str(n), "--max-new-tokens", "32",
               "--no-flush-cache", "--warmup", "1", "--prompts", str(dataset), "--record", str(record)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
        if p.returncode != 0:
            raise SystemExit(f"tuiapp attach failed: {p.stderr[-800:]}")
        events = [json.loads(line) for line in record.read_text().splitlines()]
        run = next(e for e in events if e.get("kind") == "run")
        ttfts = [e["ttft_s"] for e in events if e.get("kind") == "request" and e["ok"]]
        return run["output_tok_s"], statistics.median(ttfts) * 1000

    clients = {"tuiapp": tuiapp, "bench_serving": bench_serving}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in clients}
    try:
        for fn in clients.values():  # the server's warm-up, not counted
            fn()
        for r in range(args.runs):
            for name in (list(clients) if r % 2 == 0 else list(clients)[::-1]):
                got[name].append(clients[name]())
    finally:
        server.stop()
    print(f"real SGLang CPU server, concurrency {c}, {args.runs} runs x {n} requests x 32 tokens each")
    figs = {k: (statistics.fmean(x for x, _ in v), statistics.median(y for _, y in v)) for k, v in got.items()}
    for name, (tok_s, ttft_ms) in figs.items():
        runs = " ".join(f"{x:.0f}/{y:.1f}" for x, y in got[name])
        print(f"{name:>14s} output {tok_s:8.1f} tok/s  TTFT p50 {ttft_ms:6.1f} ms   runs (tok/s/ms): {runs}")
    (a_tok, a_ttft), (b_tok, b_ttft) = figs["tuiapp"], figs["bench_serving"]
    print(f"tuiapp / bench_serving: output tok/s {100 * (a_tok / b_tok - 1):+.1f}%, TTFT p50 {100 * (a_ttft / b_ttft - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
