"""tuiapp compare BASE NEW: per metric, the two means, NEW/BASE, its 95% interval and a
Welch verdict; ``--fail-on slower`` makes it a CI gate (tuiapp/trials/compare.py)."""

from __future__ import annotations

import argparse

HELP = "compare two recordings, ledgers or --summary files: faster, slower or within noise (a CI gate)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="the reference: a recording, a trials ledger or an attach --summary file")
    parser.add_argument("new", help="the candidate, of any of the same kinds")
    parser.add_argument("--metric", default="decode_tok_s",
                        choices=["decode_tok_s", "output_tok_s", "ttft_s", "tpot_s"],
                        help="the primary metric, the one --fail-on judges (default decode_tok_s)")
    parser.add_argument("--fail-on", choices=["slower"],
                        help="exit 1 when NEW is slower than BASE on the primary metric beyond noise")
    parser.add_argument("--min-effect-pct", type=float, default=0.5, metavar="PCT",
                        help="smaller differences are within noise whatever the test says (default 0.5)")
    parser.add_argument("--json", action="store_true", help="one JSON object for machines")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from tuiapp.common.errors import UsageError
    from tuiapp.trials.compare import CompareError, compare, load, primary_verdict, table

    if args.min_effect_pct < 0:
        raise UsageError("--min-effect-pct must be >= 0")
    try:
        rows = compare(load(Path(args.base)), load(Path(args.new)), min_effect_pct=args.min_effect_pct)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    verdict = primary_verdict(rows, args.metric)
    failed = args.fail_on == "slower" and verdict == "slower"
    if args.json:
        print(json.dumps({"base": args.base, "new": args.new, "metric": args.metric, "verdict": verdict,
                          "failed": failed, "rows": [r.as_dict() for r in rows]}, indent=1))
    else:
        print(table(rows))
        print(f"{args.metric}: {verdict or 'n/a (not in both files)'}"
              + (" -> exit 1 (--fail-on slower)" if failed else ""))
    return 1 if failed else 0
