"""Fidelity of the simulator's pacing: an independent minimal client against the model.

For each campaign configuration it starts the simulator, streams /generate one request
at a time (short prompts as in the campaign), and measures decode tok/s =
(completion_tokens - 1) / (t_last_chunk - t_first_chunk) and accept length =
completion_tokens / spec_verify_ct. The client is plain httpx, not tuiapp's bench code.
Prints model vs measured and the error in percent.

    python benchmarks/sim_fidelity.py [--runs 3] [--max-new-tokens 256]
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx
import orjson

from tuiapp.sim.args import parse_args
from tuiapp.sim.model import plan_for
from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
CONFIGS = [
    ("default (new baseline)", [], {}),
    ("old baseline", ["--cuda-graph-max-bs", "512", "--mem-fraction-static", "0.88", "--num-continuous-decode-steps", "4"], {}),
    ("EAGLE-3", ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lmsys/Kimi-K2-eagle3"], {}),
    ("custom allreduce on PCIe", [], {"SGLANG_FORCE_CUSTOM_ALLREDUCE": "1"}),
]
PROMPTS = [
    "Write a short story about a robot who learns to paint landscapes in the mountains.",
    "Explain how tensor parallelism splits a transformer layer across eight GPUs in practice.",
    "List the main differences between speculative decoding and ordinary autoregressive decoding.",
]


def one_run(url: str, prompt: str, max_new: int) -> tuple[float, float | None, int, int]:
    body = {"text": prompt, "stream": True, "sampling_params": {"max_new_tokens": max_new, "ignore_eos": True, "temperature": 0}}
    t_first = t_last = None
    meta = {}
    with httpx.stream("POST", url + "/generate", json=body, timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                now = time.perf_counter()
                meta = orjson.loads(line[6:])["meta_info"]
                t_first = t_first or now
                t_last = now
    n = meta["completion_tokens"]
    accept = n / meta["spec_verify_ct"] if meta.get("spec_verify_ct") else None
    return (n - 1) / (t_last - t_first), accept, n, meta.get("spec_verify_ct") or (n - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()
    print(f"{'configuration':<28} {'model tok/s':>11} {'measured':>9} {'err %':>7} {'pacing err %':>12}  {'runs (tok/s)':<26} {'accept model/measured':>21}")
    for name, extra, env in CONFIGS:
        plan = plan_for(parse_args(BASE + extra), env)
        with SimProcess(BASE + extra, env=env, speed=10) as sim:
            sim.wait_ready()
            runs = [one_run(sim.url, PROMPTS[i % len(PROMPTS)], args.max_new_tokens) for i in range(args.runs)]
        rates = [r[0] for r in runs]
        # pacing alone: the rate the realised tokens and verify steps imply at the modelled step time
        paced = statistics.fmean((n - 1) / (steps * plan.step_s) for _, _, n, steps in runs)
        mean = statistics.fmean(rates)
        err = 100 * (mean - plan.expected_tok_s) / plan.expected_tok_s
        acc = ""
        if plan.spec:
            measured_acc = statistics.fmean(r[1] for r in runs)
            acc = f"{plan.mean_accept_len:.3f}/{measured_acc:.3f}"
        perr = 100 * (mean - paced) / paced
        print(f"{name:<28} {plan.expected_tok_s:>11.2f} {mean:>9.2f} {err:>+7.3f} {perr:>+12.3f}  {' '.join(f'{r:.2f}' for r in rates):<26} {acc:>21}")


if __name__ == "__main__":
    main()
