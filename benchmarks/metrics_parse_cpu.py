"""CPU of reading one /metrics exposition: the poller's parse now (one scan for gauges and
counters, both name spellings) against a baseline tree's ``parse_metrics`` (gauges only).

Interleaved A/B rounds over the real 0.5.23 capture (744 lines) and the simulator-shaped
exposition of a speculating DP-2 server; microseconds per exposition, median of the rounds.

    .venv/bin/python benchmarks/metrics_parse_cpu.py [--baseline-tree DIR] [--rounds 9]

``--baseline-tree``: a ``git archive`` of another commit (default: this tree's parse_metrics,
gauges only, so the counters' share shows).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

from tuiapp.server import metrics_poll

DATA = Path(__file__).parent.parent / "tests" / "data" / "bench"


def _baseline(tree: str | None):
    if tree is None:
        return metrics_poll.parse_metrics
    spec = importlib.util.spec_from_file_location("baseline_metrics_poll", Path(tree) / "tuiapp/server/metrics_poll.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.parse_metrics


def _now(text: str) -> None:
    scanned = metrics_poll._scan(text)
    metrics_poll.parse_metrics(scanned)
    metrics_poll.parse_counters(scanned)
    metrics_poll.parse_startup(scanned)


def _us(fn, text: str, n: int) -> float:
    t = time.process_time()
    for _ in range(n):
        fn(text)
    return (time.process_time() - t) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", default=None)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    base = _baseline(args.baseline_tree)
    for name in ("metrics_sglang_0.5.23_cpu.txt", "metrics_dp2.txt"):
        text = (DATA / name).read_text()
        a, b = [], []
        for _ in range(args.rounds):
            a.append(_us(base, text, args.n))
            b.append(_us(_now, text, args.n))
        print(f"{name} ({len(text.splitlines())} lines): baseline {statistics.median(a):.0f} us, "
              f"now (gauges, counters, start-up phases, both spellings) {statistics.median(b):.0f} us")


if __name__ == "__main__":
    main()
