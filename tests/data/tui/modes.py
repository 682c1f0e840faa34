"""Event lists for each dashboard mode, deterministic, built in memory (no file to regenerate):
``single`` (attach or launch: one server, no plan), ``failed_launch`` (launch, port in use),
``curve`` (a two-trial concurrency sweep, the second trial at its fourth point). The campaign
mode reads tests/data/tui/dashboard.jsonl. Used by tests/test_tui_layouts.py and
tools/dashboard_shots.py.
"""

from __future__ import annotations

import random

from tuiapp.events import (
    Alert,
    BenchState,
    GpuSample,
    LogLine,
    Note,
    PointDone,
    RequestDone,
    RunDone,
    ServerInfo,
    ServerState,
    ServerStats,
    TrialResult,
    TrialState,
)

T0 = 1_795_000_000.0
GIB = 1024**3
URL = "http://127.0.0.1:30000"


def _gpus(out: list, rng: random.Random, now: float, n: int, busy: float) -> None:
    for gpu in range(n):
        out.append(GpuSample(t_s=now + 0.01 * gpu, index=gpu, name="NVIDIA H100 80GB HBM3",
                             mem_used_bytes=int((71.2 + 0.1 * gpu + rng.uniform(0, 0.1)) * GIB),
                             mem_total_bytes=int(79.6 * GIB), util_pct=round(busy * rng.uniform(90, 99)),
                             pcie_rx_bytes_s=busy * 2.1e9 * rng.uniform(0.8, 1.2),
                             pcie_tx_bytes_s=busy * 1.8e9 * rng.uniform(0.8, 1.2), pcie_method="counters",
                             pcie_gen=5, pcie_width=16, power_w=round(250 + busy * 300 * rng.uniform(0.9, 1.0)), power_limit_w=700.0,
                             temp_c=round(55 + gpu + busy * 10)))


def _server(out: list, t: float, *, model: str = "meta-llama/Llama-3.1-8B-Instruct", tp: int = 2) -> None:
    out.append(ServerState(t_s=t, state="ready", url=URL, pid=4242, startup_s=41.0))
    out.append(ServerInfo(t_s=t, url=URL, model_path=model, version="0.5.5", tp_size=tp))
    out.append(ServerState(t_s=t + 1, state="running", url=URL, pid=4242))
    out.append(BenchState(t_s=t + 1, state="running"))


def _request(out: list, rng: random.Random, t: float, run: int, i: int, c: int, *, error: str | None = None) -> None:
    if error is not None:
        outcome = "refused" if error.startswith("HTTP 429") else "timeout"
        out.append(RequestDone(t_s=t, run_index=run, request_index=i, ok=False, error=error, outcome=outcome))
        return
    ttft = 0.030 + 0.004 * c + rng.uniform(0, 0.01 + 0.002 * c)
    tpot = 0.0105 + 0.0009 * c + rng.uniform(0, 0.001)
    out.append(RequestDone(t_s=t, run_index=run, request_index=i, outcome="ok", prompt_tokens=512, completion_tokens=256,
                           ttft_s=ttft, tpot_s=tpot, e2e_s=ttft + 255 * tpot, decode_tok_s=1 / tpot,
                           chunks=256, finish_reason="length"))


def single(*, log: bool = False, seconds: int = 90) -> list:
    """attach (no log) or launch (log): one server at concurrency 4, a few refused requests."""
    rng = random.Random(3)
    out: list = [ServerState(t_s=T0, state="starting", url=URL, pid=4242)]
    _server(out, T0 + 41)
    start = T0 + 43
    req = run = 0
    for sec in range(seconds):
        now = start + sec
        _gpus(out, rng, now, 2, 1.0)
        for k in range(4):
            error = "HTTP 429: queue full" if sec in (30, 31, 62) and k == 0 else (
                "timeout: ReadTimeout" if sec == 75 and k == 1 else None)
            _request(out, rng, now + 0.2 * k, run, req, 4, error=error)
            req += 1
        out.append(ServerStats(t_s=now + 0.5, source="metrics", gen_throughput_tok_s=4 * 84 + rng.gauss(0, 4),
                               running_reqs=4, queue_reqs=2 if sec % 9 == 0 else 0,
                               token_usage=0.31 + 0.002 * (sec % 10)))
        if log and sec % 2 == 0:
            out.append(LogLine(t_s=now + 0.5, line_no=sec + 1, tp_rank=0, text=(
                "Decode batch, #running-req: 4, #token: 4410, token usage: 0.31, cuda graph: True, "
                "gen throughput (token/s): 336.10, #queue-req: 0")))
        if sec % 8 == 7:
            out.append(RunDone(t_s=now + 0.95, run_index=run, requests=32, duration_s=8.0, concurrency=4,
                               decode_tok_s=84 + rng.gauss(0, 0.5), output_tok_s=4 * 84 * 0.97 + rng.gauss(0, 3),
                               ttft_s=0.05, tpot_s=0.0118))
            run += 1
    return sorted(out, key=lambda e: e.t_s)


def failed_launch() -> list:
    """launch: the preflight finds the port taken; the trial fails before a server exists."""
    t = T0
    reason = "port 30000 on 127.0.0.1 is in use (pid 1312, python3 -m sglang.launch_server); choose --port or stop it"
    return [
        TrialState(t_s=t, name="launch", index=0, total=1, phase="preflight"),
        ServerState(t_s=t + 0.2, state="failed", url=URL, message=reason),
        TrialState(t_s=t + 0.3, name="launch", index=0, total=1, phase="failed", message=reason),
        TrialResult(t_s=t + 0.4, name="launch", status="failed",
                    row={"name": "launch", "status": "failed", "first_error": reason, "verdict": "dead end"}),
        Note(t_s=t + 0.4, level="error", text=reason, source="launcher"),
    ]


CONCURRENCY = (1, 2, 4, 8, 16, 32)


def curve() -> list:
    """A two-trial --curves campaign: base done at six concurrencies, new at its fourth point."""
    rng = random.Random(5)
    out: list = []
    t = T0
    for index, (name, speed) in enumerate((("base", 1.0), ("new", 1.12))):
        out.append(TrialState(t_s=t, name=name, index=index, total=2, phase="launching"))
        _server(out, t + 40)
        out.append(TrialState(t_s=t + 41, name=name, index=index, total=2, phase="running"))
        t += 42
        points = CONCURRENCY if index == 0 else CONCURRENCY[:4]
        req = 0
        for p, c in enumerate(points):
            out.append(Note(t_s=t, text=f"load point {p + 1} of {len(CONCURRENCY)}: concurrency {c}, 3 run(s)",
                            source="bench"))
            last = p == len(points) - 1 and index == 1
            for run in range(1 if last else 3):
                for sec in range(6):
                    now = t + sec
                    _gpus(out, rng, now, 2, min(1.0, 0.3 + c / 16))
                    for k in range(c):
                        _request(out, rng, now + k / max(c, 1), run, req, c)
                        req += 1
                    out.append(ServerStats(t_s=now + 0.5, source="metrics", running_reqs=c,
                                           queue_reqs=max(0, c - 16), token_usage=min(0.95, 0.04 * c),
                                           gen_throughput_tok_s=speed * 90 * c / (1 + c / 12)))
                t += 6
                out.append(RunDone(t_s=t, run_index=run, requests=6 * c, duration_s=6.0, concurrency=c,
                                   decode_tok_s=speed * 90 / (1 + c / 12), output_tok_s=speed * 90 * c / (1 + c / 12),
                                   ttft_s=0.03 + 0.004 * c, tpot_s=0.0105 + 0.0009 * c, trial=name, point_index=p))
            if last:
                break
            out_tok_s = speed * 90 * c / (1 + c / 12)
            ttft = (30 + 4 * c) / speed
            out.append(PointDone(t_s=t + 0.1, point_index=p, concurrency=c, runs=3, requests=18 * c, duration_s=18.0,
                                 output_tok_s=out_tok_s, request_throughput_req_s=out_tok_s / 256,
                                 decode_tok_s=speed * 90 / (1 + c / 12), ttft_p50_ms=ttft, ttft_p90_ms=ttft * 1.4,
                                 ttft_p99_ms=ttft * 1.9, tpot_p50_ms=10.5 + 0.9 * c, tpot_p90_ms=11 + c,
                                 tpot_p99_ms=12 + 1.1 * c, e2e_p50_ms=ttft + 255 * (10.5 + 0.9 * c),
                                 e2e_p90_ms=ttft + 255 * (11 + c), e2e_p99_ms=ttft + 255 * (12 + 1.1 * c), trial=name))
        if index == 0:
            out.append(TrialState(t_s=t + 1, name=name, index=0, total=2, phase="done"))
            out.append(TrialResult(t_s=t + 2, name=name, status="ok", row={
                "name": name, "status": "ok", "mean_decode_tok_s": 60.2, "sd_decode_tok_s": 0.4,
                "verdict": "baseline"}))
            t += 5
    out.append(Alert(t_s=t - 3, alert_kind="kv_pressure", severity="warning", alert_id=9, source="log",
                     message="KV cache usage 0.95 (token_usage) with 32 running requests"))
    return sorted(out, key=lambda e: e.t_s)
