"""Decode tok/s of a non-SGLang OpenAI-compatible server: `tuiapp attach` vs an independent probe.

`tuiapp attach URL --headless --runs 3 --summary s.json` (no flags beyond the URL) is run
as a user runs it; the probe is stdlib only (http.client), streams
/v1/chat/completions and computes the same definition on its own:
decode tok/s = (N - 1) / (t_last_output_chunk - t_first_output_chunk), N = usage
completion_tokens, or the output chunks when the server sends no usage (llama.cpp).
Probe runs go before and after each of tuiapp's (the box drifts; --rounds repeats the
pair). Ratios tuiapp / probe: over all runs, of the means (what `--summary` reports) and of
the medians; and per round (tuiapp's 3-run mean over the mean of the probe runs just
before and after it), whose median is the figure least moved by other jobs' load swings.

    .venv/bin/python benchmarks/other_servers.py http://127.0.0.1:38801
    .venv/bin/python benchmarks/other_servers.py http://127.0.0.1:38802 --start 'CMD'  # start, measure, stop
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tuiapp.bench.workload import REFERENCE_PROMPTS  # noqa: E402 - data only: the same prompts as tuiapp's


def first_model(url: str) -> str:
    with urllib.request.urlopen(url + "/v1/models", timeout=10) as resp:
        return json.load(resp)["data"][0]["id"]


def probe_once(url: str, model: str, max_tokens: int, prompt: str) -> dict:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=120)
    body = json.dumps({
        "model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
        "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True},
    })
    conn.request("POST", "/v1/chat/completions", body=body, headers={"content-type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"probe: HTTP {resp.status}: {resp.read()[:200]!r}")
    first = last = None
    chunks = 0
    usage = None
    while True:
        line = resp.readline()
        if not line:
            break
        now = time.perf_counter()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        obj = json.loads(data)
        for choice in obj.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                chunks += 1
                first = now if first is None else first
                last = now
        if isinstance(obj.get("usage"), dict):
            usage = obj["usage"].get("completion_tokens")
    conn.close()
    n = usage if usage is not None else chunks
    return {"tokens": n, "usage": usage is not None, "decode_tok_s": (n - 1) / (last - first)}


def probe(url: str, model: str, runs: int, max_tokens: int) -> list[float]:
    # as tuiapp's runs: a warm-up on the first reference prompt, then the next ones in turn
    probe_once(url, model, 32, REFERENCE_PROMPTS[0])
    return [probe_once(url, model, max_tokens, REFERENCE_PROMPTS[1 + i % 3])["decode_tok_s"] for i in range(runs)]


def tuiapp_attach(url: str) -> tuple[float, dict]:
    out = Path(tempfile.mkdtemp(prefix="other_servers_")) / "s.json"
    cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--runs", "3", "--summary", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"tuiapp attach failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    summary = json.loads(out.read_text())
    notes = [ln for ln in r.stdout.splitlines() if " note " in ln]
    return [run["decode_tok_s"] for run in summary["runs"]], notes


def wait_ready(url: str, proc: subprocess.Popen, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            first_model(url)
            return
        except OSError:
            time.sleep(1.0)
    raise SystemExit("server not ready in time")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--start", metavar="CMD", help="start this server command first, stop it after")
    ap.add_argument("--probe-runs", type=int, default=3, help="probe runs before and after tuiapp's (each)")
    ap.add_argument("--rounds", type=int, default=1, help="tuiapp attach runs (3 runs each), probes between")
    ap.add_argument("--max-tokens", type=int, default=256, help="as tuiapp's default --max-new-tokens")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    url = args.url.rstrip("/")
    proc = None
    if args.start:
        proc = subprocess.Popen(shlex.split(args.start), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        if proc is not None:
            wait_ready(url, proc)
        model = first_model(url)
        probes = probe(url, model, args.probe_runs, args.max_tokens)
        ours: list[float] = []
        notes: list[str] = []
        round_ratios: list[float] = []
        for _ in range(args.rounds):
            runs, notes = tuiapp_attach(url)
            before = probes[-args.probe_runs:]
            after = probe(url, model, args.probe_runs, args.max_tokens)
            round_ratios.append(statistics.mean(runs) / statistics.mean(before + after))
            ours += runs
            probes += after
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
    mean_ratio = statistics.mean(ours) / statistics.mean(probes)
    median_ratio = statistics.median(ours) / statistics.median(probes)
    result = {
        "url": url, "model": model,
        "tuiapp_mean_tok_s": round(statistics.mean(ours), 1), "tuiapp_median_tok_s": round(statistics.median(ours), 1),
        "probe_mean_tok_s": round(statistics.mean(probes), 1), "probe_median_tok_s": round(statistics.median(probes), 1),
        "tuiapp_runs": [round(x, 1) for x in ours], "probe_runs": [round(x, 1) for x in probes],
        "ratio_of_means": round(mean_ratio, 4), "ratio_of_medians": round(median_ratio, 4),
        "round_ratios": [round(x, 4) for x in round_ratios],
        "median_round_ratio": round(statistics.median(round_ratios), 4), "notes": notes,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{url} model={model}")
        print(f"tuiapp attach ({len(ours)} runs): decode mean {result['tuiapp_mean_tok_s']:.1f}"
              f" median {result['tuiapp_median_tok_s']:.1f} tok/s  runs {result['tuiapp_runs']}")
        print(f"stdlib probe ({len(probes)} runs):  decode mean {result['probe_mean_tok_s']:.1f}"
              f" median {result['probe_median_tok_s']:.1f} tok/s  runs {result['probe_runs']}")
        print(f"ratio tuiapp/probe: means {mean_ratio:.3f}, medians {median_ratio:.3f}; per round"
              f" {result['round_ratios']}, median {result['median_round_ratio']:.3f}  (target 0.95-1.05)")
        for note in notes:
            print("  " + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
