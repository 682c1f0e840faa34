"""tuiapp demo: the reference campaign on the built-in simulator, end to end.

The simulator is launched as a subprocess exactly as ``launch`` starts SGLang, and the
trials runner drives it: the same launcher, log watcher, benchmark client and telemetry
code that meet a real server.
"""

from __future__ import annotations

import argparse

from tuiapp.commands import metrics_args, screenshots

HELP = "run the reference tuning campaign (8 trials) on the built-in SGLang simulator"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--headless", action="store_true", help="no UI: plain progress lines on stdout")
    parser.add_argument("--record", metavar="FILE", help="record every event (use .jsonl.gz to compress)")
    parser.add_argument("--ledger", metavar="FILE", help="write the ledger as JSON")
    parser.add_argument("--only", metavar="TRIAL", nargs="+",
                        help="run only these trials of the campaign (and what they are compared with)")
    parser.add_argument("--curves", action="store_true",
                        help="run the two baselines as load curves (1 to 256 streams) instead of the campaign")
    parser.add_argument("--speed", type=float, default=20.0, metavar="X",
                        help="simulated start-up runs X times faster (decode pacing stays real; default 20)")
    parser.add_argument("--theme", help="TUI theme")
    screenshots.add_argument(parser)
    metrics_args.add_arguments(parser)


def trials_args(args: argparse.Namespace) -> argparse.Namespace:
    """``tuiapp trials campaign --sim ...``: parsed by the trials command itself, so its
    defaults (and any option it gains) are never restated here."""
    from tuiapp.commands import trials

    parser = argparse.ArgumentParser()
    trials.add_arguments(parser)
    ns = parser.parse_args(["curves" if getattr(args, "curves", False) else "campaign", "--sim", "--telemetry", "sim"])
    ns.headless, ns.record, ns.ledger, ns.only = args.headless, args.record, args.ledger, args.only
    ns.sim_speed, ns.theme, ns.screenshot_dir = args.speed, args.theme, args.screenshot_dir
    ns.metrics_port, ns.metrics_host = args.metrics_port, args.metrics_host
    return ns


def run(args: argparse.Namespace) -> int:
    from tuiapp.commands import trials
    from tuiapp.common.errors import UsageError

    if not 0 < args.speed < float("inf"):  # checked here: trials would name its own --sim-speed
        raise UsageError("--speed must be > 0")

    return trials.run(trials_args(args))
