"""The benchmark-loop options every command that benchmarks takes (attach, launch)."""

from __future__ import annotations

import argparse


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("benchmark loop")
    group.add_argument("--runs", type=int, metavar="N", help="stop after N runs (default: until stopped)")
    group.add_argument("--api", choices=["auto", "generate", "completions", "chat"], default="auto",
                       help="auto: /generate on SGLang, /v1/chat/completions on other servers")
    group.add_argument("--concurrency", type=int, default=1, metavar="N", help="closed-loop concurrent streams")
    group.add_argument("--requests-per-run", type=int, metavar="K", help="requests in one run (default: = concurrency)")
    group.add_argument("--max-new-tokens", type=int, default=256, metavar="N")
    group.add_argument("--prompts", metavar="FILE.jsonl", help="prompt file (default: the reference short prompts)")
    group.add_argument("--warmup", type=int, default=1, metavar="N", help="uncounted warm-up requests (default 1)")
