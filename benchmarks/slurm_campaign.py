"""trials --slurm on a real local Slurm (tools/slurm/, two emulated nodes on this host): the
submit-to-first-token overhead against the same trial launched locally, and tuiapp's own CPU
while N trials are in flight. The simulator is the server (--sim); needs root and the packages
tools/slurm/setup.sh installs.

    .venv/bin/python benchmarks/slurm_campaign.py [--in-flight 4] [--seconds 20] [--repeats 3]

Overhead: each trial's launch (sbatch, or the local process start) to its first token, from
the ledger (slurm_submit_to_first_token_s; two trials, two in flight, so each job has an idle
node) and from a local run's recording (the trial's "launching" state to its first request's
first token). CPU: tuiapp's process (user + system,
its children excluded: the servers run under slurmd) over --seconds while --in-flight trials
are RUNNING, each with a closed-loop benchmark at concurrency 1; then one such trial launched
locally, for comparison (the simulator, a child there, is not counted either).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "tools" / "slurm" / "cluster.sh"

PLAN = """
[slurm]
in_flight = {in_flight}
gpus_per_node = {gpus}

[baseline]
model = "Qwen/Qwen3-8B"
flags = {{tp = {tp}}}
bench = {{runs = {runs}, max_new_tokens = 64}}
"""


def plan_text(in_flight: int, trials: int, runs: int, gpus: int) -> str:
    # TP8 always: the simulator models 8 GPUs whatever Slurm hands the job (gres only packs the jobs)
    text = PLAN.format(in_flight=in_flight, gpus=gpus, tp=8, runs=runs)
    for i in range(1, trials):
        text += f'\n[[trial]]\nname = "t{i}"\nflags = {{chunked-prefill-size = {4096 * i}}}\n'
    return text


def first_token_local(rec: Path) -> list[float]:
    """Per trial: its 'launching' state to the first token of its first request (a local plan
    runs one trial at a time, so every request between two launches is the earlier one's)."""
    events = [json.loads(line) for line in rec.read_text().splitlines()[1:]]
    out, launched, seen = [], None, False
    for e in events:
        if e.get("kind") == "trial" and e.get("phase") == "launching":
            launched, seen = e["t_s"], False
        elif e.get("kind") == "request" and launched is not None and not seen and e.get("ok", True):
            out.append(e["t_s"] - (e.get("e2e_s") or 0.0) + (e.get("ttft_s") or 0.0) - launched)
            seen = True
    return out


def tuiapp(args: list[str], env: dict, cwd: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tuiapp", "trials", *args, "--sim", "--headless"],
                            env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, **kw)


def running(env: dict) -> int:
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], env=env, capture_output=True,
                         text=True, check=True).stdout
    return len(out.split())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="tuiapp-slurm-bench."))
    per_node = -(-args.in_flight // 2)
    gpus = 8 // per_node
    env0 = {**os.environ, "TUIAPP_SLURM_CPUS": str(max(per_node, 2))}
    conf = subprocess.run([str(CLUSTER), "start", str(home / "cluster")], env=env0, capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    env = {**os.environ, "SLURM_CONF": conf}
    try:
        # 1. submit -> first token, Slurm vs local, one trial at a time
        slurm_s, local_s, waits_s = [], [], []
        for r in range(args.repeats):
            work = home / f"overhead{r}"
            work.mkdir()
            # two trials, two in flight: each has an idle node (no queue wait behind another job)
            (work / "plan.toml").write_text(plan_text(2, 2, 2, 8))
            tuiapp([str(work / "plan.toml"), "--slurm", "--ledger", str(work / "slurm.json")], env, work).wait(300)
            rows = json.loads((work / "slurm.json").read_text())
            slurm_s += [row["slurm_submit_to_first_token_s"] for row in rows
                        if row.get("slurm_submit_to_first_token_s") is not None]
            waits_s += [row["slurm_queue_wait_s"] for row in rows if row.get("slurm_queue_wait_s") is not None]
            tuiapp([str(work / "plan.toml"), "--record", str(work / "local.jsonl")], env, work).wait(300)
            local_s += first_token_local(work / "local.jsonl")
        print(f"launch to first token, {len(slurm_s)} trials each (Qwen3-8B TP8 on the simulator at 20x):")
        print(f"  trials --slurm: median {statistics.median(slurm_s):.2f} s (min {min(slurm_s):.2f}, max {max(slurm_s):.2f})")
        print(f"  local launch:   median {statistics.median(local_s):.2f} s (min {min(local_s):.2f}, max {max(local_s):.2f})")
        print(f"  overhead of Slurm: {statistics.median(slurm_s) - statistics.median(local_s):+.2f} s (medians; "
              f"Slurm's queue wait on idle nodes: median {statistics.median(waits_s):.0f} s, whole seconds)")

        # 2. tuiapp's CPU with N trials in flight
        work = home / "cpu"
        work.mkdir()
        (work / "plan.toml").write_text(plan_text(args.in_flight, args.in_flight, 100000, gpus))
        proc = tuiapp([str(work / "plan.toml"), "--slurm", "--ledger", str(work / "ledger.json")], env, work)
        try:
            deadline = time.monotonic() + 120
            while running(env) < args.in_flight:
                if time.monotonic() > deadline or proc.poll() is not None:
                    print(f"never {args.in_flight} trials running", file=sys.stderr)
                    return 1
                time.sleep(0.5)
            time.sleep(5.0)  # past warm-up: the steady state
            me = psutil.Process(proc.pid)
            t0, c0 = time.monotonic(), me.cpu_times()
            time.sleep(args.seconds)
            t1, c1 = time.monotonic(), me.cpu_times()
            assert running(env) == args.in_flight
            cpu_pct = 100.0 * ((c1.user - c0.user) + (c1.system - c0.system)) / (t1 - t0)
            print(f"tuiapp's CPU with {args.in_flight} trials in flight (headless, closed loop at concurrency 1 each, "
                  f"{args.seconds:g} s): {cpu_pct:.1f}% of one core, {cpu_pct / args.in_flight:.1f}% per trial")
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(60)
        left = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout.strip()
        print(f"jobs left after Ctrl-C: {len(left.splitlines()) if left else 0}")

        # 3. the same trial launched locally, one at a time: tuiapp's CPU for one trial
        (work / "local.toml").write_text("[baseline]" + plan_text(1, 1, 100000, 8).split("[baseline]", 1)[1])
        proc = tuiapp([str(work / "local.toml")], env, work)
        try:
            me = psutil.Process(proc.pid)
            deadline = time.monotonic() + 60
            while not any("tuiapp.sim.server" in " ".join(c.cmdline()) for c in me.children(recursive=True)):
                if time.monotonic() > deadline:
                    print("the local trial never started", file=sys.stderr)
                    return 1
                time.sleep(0.5)
            time.sleep(8.0)  # started, warmed up: the steady state
            t0, c0 = time.monotonic(), me.cpu_times()
            time.sleep(args.seconds)
            t1, c1 = time.monotonic(), me.cpu_times()
            cpu_pct = 100.0 * ((c1.user - c0.user) + (c1.system - c0.system)) / (t1 - t0)
            print(f"tuiapp's CPU with 1 trial launched locally (same benchmark, {args.seconds:g} s): "
                  f"{cpu_pct:.1f}% of one core")
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(60)
    finally:
        subprocess.run([str(CLUSTER), "stop", str(home / "cluster")], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
