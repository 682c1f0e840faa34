"""tuiapp compare BASE NEW: per metric and load, the two means, NEW/BASE, its 95% interval and a
Welch verdict (Holm over loads), the failed-request shares; ``--fail-on slower`` makes it a CI
gate: 0 pass, 1 slower or worse on errors, 3 NEW cannot be judged, 2 usage
(tuiapp/trials/compare.py)."""

from __future__ import annotations

import argparse

HELP = "compare two recordings, ledgers or --summary files: faster, slower or within noise (a CI gate)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="the reference: a recording, a trials ledger or an attach --summary file")
    parser.add_argument("new", help="the candidate, of any of the same kinds")
    parser.add_argument("--metric", default="decode_tok_s",
                        choices=["decode_tok_s", "output_tok_s", "ttft_s", "tpot_s"],
                        help="the primary metric, the one --fail-on judges at every load (default decode_tok_s)")
    parser.add_argument("--fail-on", choices=["slower"],
                        help="a CI gate: exit 1 when NEW is slower on the primary metric at any load beyond noise or"
                             " fails more requests, 3 when NEW cannot be judged (a trial or load missing or failed,"
                             " fewer than 2 runs, every request failed)")
    parser.add_argument("--min-effect-pct", type=float, default=0.5, metavar="PCT",
                        help="smaller differences are within noise whatever the test says (default 0.5)")
    parser.add_argument("--json", action="store_true", help="one JSON object for machines, with every reason")


def run(args: argparse.Namespace) -> int:
    import json
    import math
    from pathlib import Path

    from tuiapp.common.errors import UsageError
    from tuiapp.trials.compare import CompareError, compare, gate, load, table

    if not math.isfinite(args.min_effect_pct) or args.min_effect_pct < 0:
        raise UsageError("--min-effect-pct must be a number >= 0")
    try:
        base, new = load(Path(args.base)), load(Path(args.new))
        rows = compare(base, new, min_effect_pct=args.min_effect_pct)
        result = gate(base, new, rows, args.metric)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    code = result.code if args.fail_on == "slower" else 0
    if args.json:
        print(json.dumps({"base": args.base, "new": args.new, "metric": args.metric, "verdict": result.verdict,
                          "gate": {0: "pass", 1: "slower", 3: "invalid"}[result.code], "exit_code": code,
                          "failed": code != 0, "reasons": result.reasons, "rows": [r.as_dict() for r in rows]},
                         indent=1))
        return code
    print(table(rows) if rows else "nothing measured in common")
    for reason in result.reasons:
        print(f"- {reason}")
    what = {0: "", 1: " -> exit 1 (--fail-on slower)", 3: " -> exit 3 (NEW cannot be judged)"}[code]
    print(f"{args.metric}: {result.verdict or 'n/a (not in both files)'}{what}")
    return code
