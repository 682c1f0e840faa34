"""How much of tests/data/logs_wild the failure detector reads right.

For each excerpt, logscan's answer against the hand-written one: files answered exactly,
incidents found with the right kind, ranks and first line, incidents reported that are
not in the answer (false or misnamed), and files whose ready/decode/last figures are right;
``--families``: the same per failure family (the kind in the answer).
Runs against any checkout, so a change can be compared with the code before it:

    .venv/bin/python benchmarks/wild_score.py [DIR] [-v] [--families]
    PYTHONPATH=/path/to/old/checkout .venv/bin/python benchmarks/wild_score.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIGURES = ("ready", "decode_lines", "last_gen_throughput", "last_accept_len")


def main(argv: list[str]) -> int:
    from tuiapp.commands.logscan import scan_file

    verbose = "-v" in argv
    args = [a for a in argv if not a.startswith("-")]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "tests" / "data" / "logs_wild"
    logs = sorted(root.glob("*.log"))
    exact = found = total = wrong = figures = 0
    families: dict[str, list[int]] = {}  # kind -> [found, in the answers, reported but not there]
    for log in logs:
        want = json.loads(log.with_suffix(".expected.json").read_text())
        got = scan_file(str(log))
        got.pop("_lines", None)
        if got["incidents"] and "count" not in got["incidents"][0]:  # a checkout from before counts
            for i in want["incidents"]:
                i.pop("count", None)
        w = [(i["kind"], i["ranks"], i["first_line"]) for i in want["incidents"]]
        g = [(i["kind"], i["ranks"], i["first_line"]) for i in got["incidents"]]
        total += len(w)
        found += sum(1 for x in w if x in g)
        wrong += sum(1 for x in g if x not in w)
        for x in w:
            fam = families.setdefault(x[0], [0, 0, 0])
            fam[1] += 1
            fam[0] += x in g
        for x in g:
            if x not in w:
                families.setdefault(x[0], [0, 0, 0])[2] += 1
        figures += all(got[k] == want[k] for k in FIGURES)
        exact += got == want
        if verbose and got != want:
            print(f"{log.stem}\n  want {w}\n  got  {g}")
    print(f"{root}: {len(logs)} excerpts; answered exactly {exact}/{len(logs)}; incidents found "
          f"(kind, ranks, first line) {found}/{total}; reported but not there {wrong}; "
          f"ready/decode/last figures right {figures}/{len(logs)}")
    if "--families" in argv:
        for kind, (ok, n, extra) in sorted(families.items()):
            print(f"  {kind:<13} found {ok}/{n}  reported but not there {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
