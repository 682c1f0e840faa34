"""tuiapp launch -- <server command>: start a server, watch it, benchmark it continuously.

A launch is a one-trial plan run by the trials runner, so launching here, in ``trials``
and in ``demo`` is the same code: preflight, launch, readiness, log watching, benchmark
loop, telemetry, stop.
"""

from __future__ import annotations

import argparse

from tuiapp.commands import metrics_args, screenshots

HELP = "launch an SGLang server (default: python -m sglang.launch_server ...), watch and benchmark it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tuiapp.commands.bench_args import add_bench_arguments

    parser.add_argument("server", nargs=argparse.REMAINDER, metavar="-- SERVER_COMMAND",
                        help="the server command after '--'; flags alone are appended to "
                             "'python -m sglang.launch_server'")
    parser.add_argument("--headless", action="store_true", help="no UI: plain progress lines on stdout")
    parser.add_argument("--record", metavar="FILE", help="record every event to FILE (.jsonl or .jsonl.gz)")
    parser.add_argument("--log", metavar="FILE",
                        help="server log file (default: beside --record, else ./tuiapp-server.log)")
    parser.add_argument("--name", default="launch", help="trial name shown and recorded")
    parser.add_argument("--model", help="model name for the OpenAI APIs (default: read from the server command:"
                        " --served-model-name, --model-path, or the model after 'sglang|vllm|transformers serve')")
    parser.add_argument("--no-preflight", action="store_true", help="skip the flag check against --help")
    parser.add_argument("--ready-timeout", type=float, default=1800.0, metavar="S",
                        help="seconds from launch to ready before giving up (default 1800)")
    parser.add_argument("--telemetry", choices=["auto", "nvml", "sim", "off"], default="auto",
                        help="GPU telemetry: auto = this machine's GPUs through NVML when it loads, else none;"
                             " sim = the simulator's GPUs (a --sim server)")
    parser.add_argument("--theme", help="TUI theme")
    screenshots.add_argument(parser)
    metrics_args.add_arguments(parser)
    add_bench_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuiapp.server.command import build_server_command

    tokens = list(args.server)
    if tokens[:1] == ["--"]:
        tokens = tokens[1:]
    argv = build_server_command(tokens)
    trial = _single_trial(argv, args)
    record = Path(args.record) if args.record else None
    log_path = Path(args.log) if args.log else _log_beside(record)
    return run_single_trial(trial, args, record_path=record, log_path=log_path,
                            preflight=not args.no_preflight)


def _log_beside(record) -> object:
    from pathlib import Path

    if record is None:
        return Path("tuiapp-server.log")
    name = record.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return record.with_name(name + ".server.log")


def _single_trial(argv: list[str], args: argparse.Namespace):
    from pathlib import Path

    from tuiapp.bench.settings import BenchSettings
    from tuiapp.common.errors import UsageError
    from tuiapp.server.command import served_model, server_family, server_url
    from tuiapp.server.preflight import split_command
    from tuiapp.trials.flags import parse_tokens
    from tuiapp.trials.plan import TimeoutSpec, TrialConfig

    command, flag_tokens = split_command(argv)
    try:
        flags = parse_tokens(flag_tokens)
    except ValueError:
        # a wrapper's own options (`srun -N 1 ...`, `bash -c "..."`): the command is run as given
        command, flags = list(argv), {}
    try:
        server_url(argv)  # the URL we will poll: a --port that is not a number stops here
    except ValueError as exc:
        raise UsageError(f"server command: {exc}") from None
    for name in ("runs", "concurrency", "requests_per_run", "max_new_tokens", "warmup"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "warmup" else 1):
            raise UsageError(f"--{name.replace('_', '-')} must be {'>= 0' if name == 'warmup' else '>= 1'}")
    if not args.ready_timeout > 0:  # NaN too
        raise UsageError("--ready-timeout must be > 0")
    for name in ("name", "model"):
        if getattr(args, name) == "":
            raise UsageError(f"--{name} must not be empty")
    if args.prompts and not Path(args.prompts).is_file():
        raise UsageError(f"--prompts {args.prompts}: no such file")
    from pydantic import ValidationError

    from tuiapp.commands.bench_args import load_settings, workload_of

    try:
        # SGLang gets /generate; a server we know is not SGLang the standard API only (and
        # one we do not know is settled by discovery once it is ready: trials/runner.py)
        other = server_family(argv) in ("vllm", "transformers")
        fields = dict(runs=args.runs, requests_per_run=args.requests_per_run, concurrency=args.concurrency,
                      max_new_tokens=args.max_new_tokens, warmup_requests=args.warmup,
                      api=("chat" if other else "generate") if args.api == "auto" else args.api,
                      model=args.model or served_model(argv), workload=workload_of(args))
        if other:
            fields.update(sglang_extensions=False, flush_cache=False)
        fields.update(load_settings(args))  # --output-tokens MEAN[:SPREAD] overrides --max-new-tokens
        bench = BenchSettings(**fields)
    except ValueError as exc:  # pydantic's ValidationError is one
        if isinstance(exc, ValidationError):
            err = exc.errors()[0]
            where, msg = ".".join(str(p) for p in err["loc"]), err["msg"].removeprefix("Value error, ")
            raise UsageError(f"{where}: {msg}" if where else msg) from None
        raise UsageError(str(exc)) from None
    return TrialConfig(name=args.name, command=tuple(command), flags=flags, env={}, bench=bench,
                       timeouts=TimeoutSpec(ready_s=args.ready_timeout, run_s=None), is_baseline=True)


def run_single_trial(trial, args: argparse.Namespace, *, record_path, log_path, preflight: bool) -> int:
    from tuiapp.commands.frontend import run as run_session
    from tuiapp.trials.campaign import build_trials_session
    from tuiapp.trials.ledger import Ledger
    from tuiapp.trials.plan import Plan
    from tuiapp.trials.runner import RunnerOptions

    plan = Plan(path=log_path, name=trial.name, description="", baseline=trial, trials=[])
    from tuiapp.commands.trials import host_samples_wanted

    options = RunnerOptions(telemetry=args.telemetry, log_file=log_path, preflight=preflight,
                            host_samples=host_samples_wanted(args))
    ledger = Ledger()
    session, runner = build_trials_session(plan, [trial], ledger, options, title=trial.name,
                                           record_path=record_path)
    session.header["mode"] = "launch"
    session.metrics = metrics_args.start(args)
    code = run_session(session, headless=args.headless, theme=args.theme, screenshot_dir=args.screenshot_dir)
    from tuiapp.common.errors import EXIT_INTERRUPTED

    if code == EXIT_INTERRUPTED and runner.max_load:  # --find-max-load cut short: the answer so far
        print(f"{runner.max_load['text']} (interrupted: the answer so far)", flush=True)
    if log_path.exists():  # nothing was launched when preflight refused the command
        print(f"server log: {log_path}")
    return code
