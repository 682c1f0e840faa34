"""The benchmark client's cost and schedule before and after a change, interleaved in one run.

    .venv/bin/python benchmarks/tree_cost.py --baseline-tree DIR [--pairs 3] [--tokens 256]

DIR is a ``git archive <commit> tuiapp | tar -x -C DIR`` of the code before the change. Each
pair runs the same ``tuiapp attach --headless`` twice, the baseline tree's then this tree's (the
order alternates pair by pair), against one tuiapp.sim.testserver (1 token per SSE chunk, 10 ms
steps: the worst case for a client), in two loads:

  closed loop at concurrency 64 (bench_cost.py's load): CPU s per 100k tokens;
  open loop at 100 req/s for 8 s (load_speed.py's): CPU per 100k tokens, and sent / offered rate.

CPU is getrusage(RUSAGE_CHILDREN) of the whole tuiapp process (start-up included); tokens are the
server's count. Printed per load: the medians of both trees and their ratio (this / baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_cost import server_tokens  # noqa: E402
from bench_peers import run_measured, start_fake  # noqa: E402

HERE = Path(__file__).resolve().parents[1]


def attach(url: str, tree: Path, load: list[str], tokens: int, summary: Path) -> tuple[float, int, dict]:
    cmd = [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--runs", "1", "--api", "chat",
           "--max-new-tokens", str(tokens), "--input-tokens", "32", "--warmup", "1", "--no-flush-cache",
           "--telemetry", "off", "--summary", str(summary), *load]
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = server_tokens(url)
    proc, cpu, _wall = run_measured(cmd, env=env, cwd=tree)
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: tuiapp attach {' '.join(load)} failed: {proc.stderr[-400:]}")
    return cpu, server_tokens(url) - before, json.loads(summary.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-tree", required=True, type=Path, help="a git archive of tuiapp/ before the change")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    trees = {"baseline": args.baseline_tree.resolve(), "this": HERE}
    if not (trees["baseline"] / "tuiapp" / "__init__.py").exists():
        print(f"tree_cost: {trees['baseline']} has no tuiapp/ package", file=sys.stderr)
        return 2
    loads = {"concurrency 64": ["--concurrency", "64", "--requests-per-run", "256"],
             "100 req/s": ["--request-rate", "100", "--requests-per-run", "800"]}
    srv = start_fake(step_ms=10, tokens_per_chunk=1)
    out = Path(tempfile.mkdtemp(prefix="tree_cost_"))
    cost: dict[tuple[str, str], list[float]] = {}
    sched: dict[tuple[str, str], list[float]] = {}
    try:
        for pair in range(args.pairs):
            order = ["baseline", "this"] if pair % 2 == 0 else ["this", "baseline"]
            for load_name, load in loads.items():
                for tree in order:
                    cpu, tokens, summary = attach(srv.url, trees[tree], load, args.tokens,
                                                  out / f"{pair}-{tree}-{len(cost)}.json")
                    cost.setdefault((load_name, tree), []).append(cpu / tokens * 1e5)
                    (point,) = summary["points"]
                    sent = point.get("sent_request_rate", point.get("achieved_request_rate"))
                    offered = point.get("offered_request_rate", point.get("scheduled_request_rate"))
                    if sent and offered:
                        sched.setdefault((load_name, tree), []).append(sent / offered)
                    print(f"pair {pair} {load_name:15s} {tree:8s} cpu/100k tok={cpu / tokens * 1e5:.2f}s"
                          + (f" sent/offered={sent / offered:.4f}" if sent and offered else ""), flush=True)
    finally:
        srv.stop()
    for load_name in loads:
        b, t = statistics.median(cost[(load_name, "baseline")]), statistics.median(cost[(load_name, "this")])
        line = f"{load_name}: CPU per 100k tokens, median: baseline {b:.2f}s, this {t:.2f}s, ratio {t / b:.3f}"
        if (load_name, "this") in sched:
            line += (f"; sent/offered median: baseline {statistics.median(sched[(load_name, 'baseline')]):.4f},"
                     f" this {statistics.median(sched[(load_name, 'this')]):.4f}")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
