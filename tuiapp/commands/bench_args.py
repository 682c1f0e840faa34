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
    group.add_argument("--max-new-tokens", type=int, default=256, metavar="N",
                       help="output tokens per request (default 256; with --output-tokens, its mean wins)")
    group.add_argument("--prompts", metavar="FILE", help="prompt file: JSONL (text, OpenAI chat) or ShareGPT JSON"
                       " (default: the reference short prompts)")
    group.add_argument("--warmup", type=int, default=1, metavar="N", help="uncounted warm-up requests (default 1)")
    load = parser.add_argument_group("load, workload, sweeps and SLO (docs/load-curves.md)")
    load.add_argument("--request-rate", type=float, metavar="R",
                      help="open loop: R requests/s, Poisson arrivals (instead of --concurrency)")
    load.add_argument("--burstiness", type=float, default=1.0, metavar="B",
                      help="gamma shape of the arrival gaps: 1 = Poisson, <1 burstier, >1 steadier")
    load.add_argument("--max-concurrency", type=int, metavar="N", help="open loop: at most N requests in flight")
    load.add_argument("--input-tokens", dest="input_tokens_spec", metavar="MEAN[:SPREAD]",
                      help="synthetic prompts of MEAN tokens (uniform in mean+-spread), e.g. 512 or 512:64")
    load.add_argument("--output-tokens", metavar="MEAN[:SPREAD]",
                      help="output lengths, e.g. 256:32 (uniform in mean+-spread; overrides --max-new-tokens)")
    load.add_argument("--shared-prefix-tokens", type=int, default=0, metavar="N",
                      help="synthetic prompts start with a prefix of N tokens shared within their group")
    load.add_argument("--prefix-groups", type=int, default=1, metavar="G", help="groups of shared prefixes")
    load.add_argument("--sweep", metavar="KIND=V,V,...",
                      help="load points: concurrency=1,4,16,64 or request-rate=1,2,4,8 (--runs per point, default 3)")
    load.add_argument("--slo", metavar="GOALS", help="service-level goals per request: ttft_ms=N,tpot_ms=N,e2e_ms=N;"
                      " adds goodput and the share that met them")
    load.add_argument("--find-max-load", action="store_true",
                      help="search the largest rate (or concurrency) the server carries: >= 99%% of every request sent"
                           " meets --slo (failures and refusals are misses) and, open loop, >= 95%% of the offered"
                           " rate is served (needs --slo)")
    load.add_argument("--max-search-points", type=int, default=8, metavar="N", help="--find-max-load's probes at most")


def load_settings(args: argparse.Namespace) -> dict:
    """The load/workload/sweep/SLO options as BenchSettings fields (ValueError: one line)."""
    from tuiapp.bench.settings import parse_mean_spread, parse_slo, parse_sweep

    out: dict = {}
    if args.request_rate is not None and args.sweep:
        raise ValueError("--request-rate and --sweep are exclusive (a sweep sets the load of each point)")
    if args.request_rate is not None:
        out["request_rate"] = args.request_rate
    out["burstiness"] = args.burstiness
    if args.max_concurrency is not None:
        out["max_concurrency"] = args.max_concurrency
    if args.input_tokens_spec is not None:
        try:
            out["input_tokens"], out["input_spread"] = parse_mean_spread(args.input_tokens_spec)
        except ValueError as exc:
            raise ValueError(f"--input-tokens: {exc}") from None
    if args.output_tokens is not None:
        try:
            out["max_new_tokens"], out["output_spread"] = parse_mean_spread(args.output_tokens)
        except ValueError as exc:
            raise ValueError(f"--output-tokens: {exc}") from None
    out["shared_prefix_tokens"] = args.shared_prefix_tokens
    out["prefix_groups"] = args.prefix_groups
    if args.sweep:
        out["sweep"], out["sweep_values"] = parse_sweep(args.sweep)
    if args.slo:
        out.update(parse_slo(args.slo))
    if args.find_max_load and not args.slo:
        raise ValueError("--find-max-load needs --slo (the goals the load must keep)")
    out["find_max_load"] = args.find_max_load
    out["max_search_points"] = args.max_search_points
    return out


def workload_of(args: argparse.Namespace) -> str:
    from tuiapp.common.errors import UsageError

    synthetic = args.input_tokens_spec is not None  # --input-tokens 0 is an error, not "unset"
    if args.prompts and synthetic:
        raise UsageError("--prompts and --input-tokens are exclusive")
    return args.prompts or ("synthetic" if synthetic else "reference")
