"""Regenerate dashboard.jsonl: a deterministic slice of the reference campaign for the TUI tests.

Trials 1-4 are done (two ok, a JIT failure, an AssertionError-then-OOM), trial 5 (EAGLE-3) has
run for a minute: 8 GPUs at 1 Hz, one request a second, decode log lines, 10 runs.
Run: .venv/bin/python tests/data/tui/make_events.py
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from tuiapp.events import (
    Alert,
    BenchState,
    BenchSummary,
    GpuSample,
    LogLine,
    Note,
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
TOTAL = 8
JIT_TB = """Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/layers/flashinfer_comm_fusion.py", line 61, in ensure_workspace
    _workspace = comm.trtllm_create_ipc_workspace_for_all_reduce_fusion(
  File "/usr/local/lib/python3.12/dist-packages/flashinfer/jit/core.py", line 148, in build_and_load
    raise RuntimeError(f"No supported CUDA architectures found for {self.name}")
RuntimeError: No supported CUDA architectures found for trtllm_comm (SM 12.0)"""
ASSERT_TB = """Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2573, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/flashinfer.py", line 214, in dispatch
    assert hidden_states.shape[0] <= self.max_num_tokens_per_rank
AssertionError"""
OOM_TB = """Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 389, in capture
    self.capture_one_batch_size(bs, forward)
  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 802, in forward
    workspace = torch.empty((m, n), dtype=dtype, device=device)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 95.59 GiB of which 1.02 GiB is free."""


def events() -> list:
    rng = random.Random(7)
    out: list = []
    t = T0

    def trial_done(i: int, name: str, status: str, row: dict, start: float) -> None:
        out.append(TrialState(t_s=start, name=name, index=i, total=TOTAL, phase="launching"))
        out.append(TrialState(t_s=start + 200, name=name, index=i, total=TOTAL,
                              phase="done" if status == "ok" else "failed", message=row.get("first_error", "")))
        out.append(TrialResult(t_s=start + 201, name=name, status=status, row={"name": name, "status": status, **row}))

    base = {"--cuda-graph-max-bs": [512, 128], "--mem-fraction-static": [0.88, None],
            "--num-continuous-decode-steps": [4, 1]}
    trial_done(0, "old-baseline", "ok", {"mean_decode_tok_s": 82.04, "sd_decode_tok_s": 0.21,
                                          "verdict": "baseline", "diff": {}}, t)
    trial_done(1, "new-baseline", "ok", {"mean_decode_tok_s": 89.48, "sd_decode_tok_s": 0.25,
                                          "ci95_decode_tok_s": [89.17, 89.79], "verdict": "faster",
                                          "diff": base, "confound": "3 knobs changed"}, t + 300)
    trial_done(2, "flashinfer-ar-fusion", "jit_arch",
               {"mean_decode_tok_s": None, "sd_decode_tok_s": None, "verdict": "dead end",
                "first_error": "RuntimeError: No supported CUDA architectures found for trtllm_comm",
                "diff": {"--enable-flashinfer-allreduce-fusion": [False, True]}}, t + 600)
    out.append(Alert(t_s=t + 700, alert_kind="jit_arch", message="RuntimeError: No supported CUDA architectures "
                     "found for trtllm_comm (SM 12.0)", ranks=list(range(8)), first_line=812, traceback=JIT_TB,
                     alert_id=1))
    trial_done(3, "ep-flashinfer-a2a", "assertion",
               {"mean_decode_tok_s": None, "verdict": "dead end", "first_error": "AssertionError",
                "diff": {"--moe-runner-backend": [None, "flashinfer_cutlass"], "--moe-a2a-backend": [None, "flashinfer"]}},
               t + 900)
    out.append(TrialState(t_s=t + 1000, name="ep-flashinfer-a2a", index=3, total=TOTAL, phase="running"))
    out.append(Alert(t_s=t + 1001, alert_kind="assertion", message="AssertionError  (token_dispatcher/flashinfer.py:214 dispatch)",
                     ranks=[0, 1, 2, 3], first_line=1440, traceback=ASSERT_TB, alert_id=2))
    out.append(Alert(t_s=t + 1002, alert_kind="assertion", message="AssertionError  (token_dispatcher/flashinfer.py:214 dispatch)",
                     ranks=list(range(8)), first_line=1440, traceback=ASSERT_TB, alert_id=2))
    out.append(Alert(t_s=t + 1010, alert_kind="oom", message="torch.OutOfMemoryError: CUDA out of memory. Tried to "
                     "allocate 1.75 GiB. GPU 3 has a total capacity of 95.59 GiB of which 1.02 GiB is free.",
                     ranks=[3], first_line=1502, traceback=OOM_TB, alert_id=3))
    out.append(Alert(t_s=t + 1011, alert_kind="oom", message="torch.OutOfMemoryError: CUDA out of memory. Tried to "
                     "allocate 1.75 GiB. GPU 3 has a total capacity of 95.59 GiB of which 1.02 GiB is free.",
                     ranks=[5], first_line=1502, traceback=OOM_TB, alert_id=3))

    # Trial 5: EAGLE-3, launched at t+1200, ready 95 s later, then a minute of benchmark.
    t = T0 + 1200
    out.append(TrialState(t_s=t, name="eagle3", index=4, total=TOTAL, phase="launching"))
    out.append(ServerState(t_s=t, state="starting", url="http://127.0.0.1:30000", pid=48121))
    out.append(Note(t_s=t + 1, level="info", text="pcie via NVML throughput counters (20 ms sample)", source="telemetry"))
    line_no = 1
    for i, text in enumerate(["server_args=ServerArgs(model_path='moonshotai/Kimi-K2.5', tp_size=8, "
                              "speculative_algorithm='EAGLE3', ...)",
                              "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=9.41 GB",
                              "Capture cuda graph end. Time elapsed: 41.02 s. mem usage=2.21 GB. avail mem=6.88 GB."]):
        for rank in (0,) if i == 0 else range(8):
            out.append(LogLine(t_s=t + 20 + 30 * i, line_no=line_no, text=text, tp_rank=rank))
            line_no += 1
    ready = t + 95
    out.append(ServerState(t_s=ready, state="ready", url="http://127.0.0.1:30000", pid=48121, startup_s=95.0))
    out.append(ServerInfo(t_s=ready, url="http://127.0.0.1:30000", model_path="moonshotai/Kimi-K2.5", version="0.5.5",
                          tp_size=8, ep_size=1, speculative_algorithm="EAGLE3", speculative_num_steps=3,
                          speculative_eagle_topk=1, speculative_num_draft_tokens=4))
    out.append(TrialState(t_s=ready + 1, name="eagle3", index=4, total=TOTAL, phase="running"))
    out.append(BenchState(t_s=ready + 1, state="running"))
    out.append(ServerState(t_s=ready + 2, state="running", url="http://127.0.0.1:30000", pid=48121))
    out.append(Alert(t_s=ready + 40.5, alert_kind="kv_pressure", severity="warning", message="KV cache usage 0.93 "
                     "(token_usage) with 1 running request", source="log", alert_id=4))

    runs: list[float] = []
    req_i = 0
    start = ready + 2
    for sec in range(60):
        now = start + sec
        for gpu in range(8):
            used = (86.1 + 0.05 * gpu + (7.5 if gpu == 3 else 0.0) + rng.uniform(0, 0.1)) * GIB
            busy = (sec % 7) < 5
            rx = (3.2e9 if busy else 0.4e9) * rng.uniform(0.85, 1.15)
            tx = (2.9e9 if busy else 0.3e9) * rng.uniform(0.85, 1.15)
            out.append(GpuSample(t_s=now + 0.01 * gpu, index=gpu, name="NVIDIA RTX PRO 6000 Blackwell",
                                 mem_used_bytes=int(used), mem_total_bytes=int(95.59 * GIB),
                                 util_pct=round(rng.uniform(88, 99), 0), pcie_tx_bytes_s=tx, pcie_rx_bytes_s=rx,
                                 pcie_method="throughput", pcie_gen=5, pcie_width=16,
                                 power_w=None if gpu == 7 else round(rng.uniform(310, 360), 1),
                                 power_limit_w=None if gpu == 7 else 600.0,
                                 temp_c=round(66 + gpu + rng.uniform(0, 2) + (14 if gpu == 6 else 0), 0)))
        tok_s = 54.0 + rng.gauss(0, 0.6)
        accept = 2.9 + rng.gauss(0, 0.08)
        out.append(RequestDone(t_s=now + 0.9, run_index=req_i // 5, request_index=req_i, prompt_tokens=30,
                               completion_tokens=48, ttft_s=0.052 + rng.uniform(0, 0.008), tpot_s=1 / tok_s,
                               e2e_s=0.9, decode_tok_s=tok_s, chunks=17, tokens_per_chunk=accept,
                               accept_length=accept, finish_reason="length"))
        req_i += 1
        if sec % 2 == 1:
            gen = 53.0 + rng.gauss(0, 1.0)
            out.append(ServerStats(t_s=now + 0.5, source="log_decode", gen_throughput_tok_s=gen,
                                   accept_length=accept, accept_rate=(accept - 1) / 3, running_reqs=1, queue_reqs=0,
                                   token_usage=0.21, cuda_graph=True))
            for rank in (0,):  # SGLang logs decode batches from TP0 only
                out.append(LogLine(t_s=now + 0.5, line_no=line_no, tp_rank=rank, text=(
                    f"Decode batch, #running-req: 1, #token: 1043, token usage: 0.21, accept len: {accept:.2f}, "
                    f"accept rate: {(accept - 1) / 3:.2f}, cuda graph: True, gen throughput (token/s): {gen:.2f}, "
                    "#queue-req: 0")))
                line_no += 1
        if req_i % 5 == 0:
            runs.append(tok_s)
            out.append(RunDone(t_s=now + 0.95, run_index=req_i // 5 - 1, requests=5, duration_s=4.6,
                               decode_tok_s=tok_s, output_tok_s=tok_s * 0.95, ttft_s=0.055, tpot_s=1 / tok_s,
                               accept_length=accept, trial="eagle3"))
    out.append(LogLine(t_s=start + 41, line_no=line_no, level="warning", tp_rank=0,
                       text="KV cache pool is nearly full (token usage 0.93); retracting 0 requests"))
    out.append(LogLine(t_s=start + 55, line_no=line_no + 1, level="error", tp_rank=2,
                       text="[NCCL WARN] Cuda failure 'out of memory' on rank 2 (transient, retried)"))
    mean = sum(runs) / len(runs)
    sd = (sum((r - mean) ** 2 for r in runs) / (len(runs) - 1)) ** 0.5
    half = 2.262 * sd / len(runs) ** 0.5
    out.append(BenchSummary(t_s=start + 60, runs=len(runs), mean_decode_tok_s=mean, sd_decode_tok_s=sd,
                            ci95_decode_tok_s=(mean - half, mean + half), accept_length=2.9, trial="eagle3"))
    return sorted(out, key=lambda e: e.t_s)


if __name__ == "__main__":
    path = Path(__file__).with_name("dashboard.jsonl")
    # None fields left out to keep the file small; load_event fills them back in.
    path.write_bytes(b"".join(orjson.dumps(e.model_dump(mode="json", exclude_none=True)) + b"\n"
                              for e in events()))
    print(f"wrote {path}")
