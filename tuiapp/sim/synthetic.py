"""A campaign-shaped event stream at the default rates, for tests and benchmarks.

Not the simulator: no process, no HTTP, no timing. It yields, in time order, what a
recording of the reference campaign carries per second: 8 full GPU samples and a host
sample (1 Hz), a /metrics poll (1 Hz), TP0's ``Decode batch`` log line and its parsed
stats every 40 decode steps (~2.2 a second at 90 tok/s), and per request a Prefill line,
an access-log line and a RequestDone; runs, trial states and results, and the campaign's
failures as alerts. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from tuiapp import events as ev  # the event contract is all a stand-in may import

GIB = 1024**3


@dataclass(frozen=True)
class SynthTrial:
    name: str
    decode_tok_s: float
    accept_length: float | None = None
    # per request: verify steps that accepted 0, 1, 2, 3 drafts (meta_info.spec_accept_histogram)
    accept_histogram: tuple[int, ...] | None = None
    pcie_gb_s: float = 0.4
    failure: str | None = None  # alert kind raised half-way, ending the trial


CAMPAIGN = (
    SynthTrial("baseline", 89.5),
    # conditional acceptance 0.75, 0.6, 0.45 per position: 107 steps a 256-token request, 2.40 tokens a step
    SynthTrial("eagle3", 54.0, accept_length=2.4, accept_histogram=(27, 32, 26, 22), pcie_gb_s=6.0),
    SynthTrial("custom-ar-pcie", 38.0, pcie_gb_s=11.0),
    SynthTrial("ep-flashinfer-a2a", 70.0, failure="oom"),
)


def campaign_events(
    duration_s: float,
    *,
    start_t_s: float = 1_795_000_000.0,
    gpus: int = 8,
    gpu_hz: float = 1.0,
    trials: tuple[SynthTrial, ...] = CAMPAIGN,
    seed: int = 1,
) -> Iterator[ev._Event]:
    rng = random.Random(seed)
    per_trial_s = duration_s / len(trials)
    t = start_t_s
    yield ev.ServerState(t_s=t, state="starting", url="http://127.0.0.1:30000", pid=4242)
    line_no = 0
    run_index = 0
    alert_id = 0
    for k, trial in enumerate(trials):
        t0 = start_t_s + k * per_trial_s
        end = t0 + per_trial_s
        yield ev.TrialState(t_s=t0, name=trial.name, index=k, total=len(trials), phase="running")
        yield ev.ServerState(t_s=t0 + 0.1, state="ready", url="http://127.0.0.1:30000", pid=4242, startup_s=84.0)
        yield ev.ServerInfo(
            t_s=t0 + 0.2, url="http://127.0.0.1:30000", model_path="moonshotai/Kimi-K2.5", version="0.5.6",
            tp_size=8, speculative_algorithm="EAGLE3" if trial.accept_length else None,
        )
        next_gpu = next_host = t0 + 0.5
        next_decode = t0 + 0.3
        next_request = t0 + 3.0
        requests_in_run: list[float] = []
        run_start = t0
        runs_of_trial: list[float] = []
        failed = False
        t = t0 + 0.3
        while t < end:
            t = min(next_gpu, next_host, next_decode, next_request)
            if t >= end:
                break
            if not failed and trial.failure and t > t0 + per_trial_s / 2:
                failed = True
                alert_id += 1
                line_no += 1
                yield ev.Alert(
                    t_s=t, alert_kind=trial.failure, message="torch.OutOfMemoryError: CUDA out of memory. "
                    "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 95.59 GiB",
                    ranks=[0, 1, 2, 3, 4, 5, 6, 7], first_line=line_no, alert_id=alert_id,
                    traceback="Traceback (most recent call last):\n  ...\ntorch.OutOfMemoryError: CUDA out of memory.",
                )
                yield ev.ServerState(t_s=t + 0.5, state="failed", exit_code=1, message="server exited")
                yield ev.TrialState(t_s=t + 1, name=trial.name, index=k, total=len(trials), phase="failed", message="oom")
            rate = trial.decode_tok_s * (1 + rng.gauss(0, 0.003))
            if t == next_gpu:
                for i in range(gpus):
                    yield ev.GpuSample(
                        t_s=t, index=i, uuid=f"GPU-{i:08x}-5a1c-4b2e-9d7f-0123456789ab",
                        name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                        mem_used_bytes=int((78 + i * 0.3 + rng.random()) * GIB), mem_reserved_bytes=int(0.6 * GIB),
                        mem_total_bytes=int(95.59 * GIB), util_pct=0.0 if failed else 97.0 + rng.random() * 3,
                        pcie_tx_bytes_s=trial.pcie_gb_s * 1e9 * (1 + rng.random() * 0.05),
                        pcie_rx_bytes_s=trial.pcie_gb_s * 1e9 * (1 + rng.random() * 0.05),
                        pcie_method="counters", pcie_gen=5, pcie_width=16, pcie_gen_max=5, pcie_width_max=16,
                        pcie_replay_count=0, power_w=420.0 + rng.random() * 30, power_limit_w=600.0, temp_c=60.0 + rng.random() * 5,
                        sm_clock_mhz=2430, clock_event_reasons=0,
                    )
                next_gpu += 1 / gpu_hz
                continue
            if t == next_host:
                yield ev.HostSample(t_s=t, cpu_pct=12.5 + rng.random(), mem_used_bytes=180 * GIB,
                                 mem_total_bytes=1024 * GIB, server_rss_bytes=40 * GIB)
                yield ev.ServerStats(t_s=t, source="metrics", gen_throughput_tok_s=None if failed else rate,
                                  accept_length=trial.accept_length, running_reqs=0 if failed else 1,
                                  queue_reqs=0, token_usage=0.02)
                next_host += 1.0
                continue
            if failed:
                next_decode = next_request = end
                continue
            if t == next_decode:
                line_no += 1
                accept = f"accept len: {trial.accept_length:.2f}, accept rate: 0.61, " if trial.accept_length else ""
                yield ev.LogLine(
                    t_s=t, line_no=line_no, tp_rank=0,
                    text=f"[2026-11-29 10:{int(t) % 60:02d}:00 TP0] Decode batch, #running-req: 1, #token: 3712, "
                    f"token usage: 0.02, {accept}cuda graph: True, gen throughput (token/s): {rate:.2f}, #queue-req: 0",
                )
                yield ev.ServerStats(t_s=t, source="log_decode", gen_throughput_tok_s=rate, running_reqs=1, queue_reqs=0,
                                  token_usage=0.02, accept_length=trial.accept_length, cuda_graph=True)
                steps = 40 * (trial.accept_length or 1.0)
                next_decode += steps / trial.decode_tok_s
                continue
            # a request finished
            completion = 256
            e2e = 0.045 + (completion - 1) / rate
            requests_in_run.append(rate)
            line_no += 2
            yield ev.LogLine(t_s=t, line_no=line_no - 1, tp_rank=0,
                          text="[2026-11-29 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 30, #cached-token: 0, "
                          "token usage: 0.02, #running-req: 0, #queue-req: 0")
            yield ev.LogLine(t_s=t, line_no=line_no, text='INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK')
            yield ev.RequestDone(t_s=t, run_index=run_index, request_index=len(requests_in_run) - 1, prompt_tokens=30,
                              completion_tokens=completion, ttft_s=0.045, tpot_s=1 / rate, e2e_s=e2e,
                              decode_tok_s=rate, chunks=completion, tokens_per_chunk=1.0,
                              accept_length=trial.accept_length, finish_reason="length",
                              spec_verify_ct=sum(trial.accept_histogram) if trial.accept_histogram else None,
                              spec_accept_histogram=list(trial.accept_histogram) if trial.accept_histogram else None)
            next_request += e2e
            if len(requests_in_run) == 5:
                decode = sum(requests_in_run) / 5
                runs_of_trial.append(decode)
                yield ev.RunDone(t_s=t, run_index=run_index, requests=5, duration_s=t - run_start,
                              decode_tok_s=decode, output_tok_s=decode * 0.985, ttft_s=0.045, tpot_s=1 / decode,
                              accept_length=trial.accept_length, trial=trial.name,
                              spec_accept_histogram=[5 * h for h in trial.accept_histogram] if trial.accept_histogram else None)
                run_index += 1
                run_start = t
                requests_in_run = []
        if runs_of_trial:
            m = sum(runs_of_trial) / len(runs_of_trial)
            yield ev.BenchSummary(t_s=end - 0.01, runs=len(runs_of_trial), mean_decode_tok_s=m, sd_decode_tok_s=0.3,
                               trial=trial.name)
        yield ev.TrialResult(
            t_s=end - 0.005, name=trial.name, status=trial.failure or "ok",
            row={"name": trial.name, "status": trial.failure or "ok", "runs_decode_tok_s": runs_of_trial,
                 "mean_decode_tok_s": (sum(runs_of_trial) / len(runs_of_trial)) if runs_of_trial else None,
                 "sd_decode_tok_s": 0.3 if runs_of_trial else None, "accept_length": trial.accept_length,
                 "verdict": "baseline" if k == 0 else ("slower" if runs_of_trial else None),
                 "diff": {} if k == 0 else {"trial": {"baseline": None, "trial": trial.name}},
                 "first_error": trial.failure},
        )
        if not failed:
            yield ev.TrialState(t_s=end - 0.001, name=trial.name, index=k, total=len(trials), phase="done")
