"""The report's section on speculative acceptance per draft position, per trial.

From the runs' pooled histograms (RunDone.spec_accept_histogram, tuiapp.common.acceptance):
per trial, acceptance at each draft position (accepted / steps whose budget reached it, the
conditional rate after it, the share of steps that saw it), the accept-length distribution,
and where the ledger compared trials per position (Welch, tuiapp.common.acceptance_compare)
its verdicts.
"""

from __future__ import annotations

from tuiapp.common import acceptance
from tuiapp.common.acceptance_compare import summary_text
from tuiapp.common.numfmt import num
from tuiapp.events import RunDone, ServerInfo, TrialResult, _Event
from tuiapp.record.markdown import table

NO_SPEC = "No speculative decoding in this recording."
NO_HISTOGRAM = ("The server speculated but sent no per-request histogram (`spec_accept_histogram`, "
                "SGLang #18332): acceptance per position is not known.")


def _pct(value: float | None) -> str:
    return num(value * 100 if value is not None else None, ".1f", "%")


def acceptance_section(events: list[_Event]) -> list[str]:
    tallies: dict[str, acceptance.Tally] = {}
    for ev in events:
        if isinstance(ev, RunDone) and ev.spec_accept_histogram:
            tallies.setdefault(ev.trial or "runs", acceptance.Tally()).add(ev.spec_accept_histogram, ev.spec_cap_histogram)
    if not tallies:
        speculating = any(isinstance(e, ServerInfo) and e.speculative_algorithm for e in events)
        return [NO_HISTOGRAM if speculating else NO_SPEC, ""]
    top = max(len(t.positions()) for t in tallies.values())
    head = ["trial", "verify steps", *[f"position {k}" for k in range(1, top + 1)], "mean accept len",
            "accept length 1, 2, ... (% of steps)"]
    rows = []
    for name, tally in tallies.items():
        cells = [name, str(tally.steps)]
        positions = tally.positions()
        for k in range(top):
            if k >= len(positions):
                cells.append("-")
                continue
            p = positions[k]
            cell = f"{_pct(p.rate)} (then {_pct(p.conditional)})"
            if p.observed_steps < tally.steps:
                cell += f", seen by {100 * p.observed_steps / tally.steps:.0f}% of steps"
            cells.append(cell)
        cells.append(num(acceptance.mean_length(tally.accepted), ".2f"))
        cells.append(" / ".join(f"{share * 100:.0f}" for share in acceptance.length_shares(tally.accepted)))
        rows.append(cells)
    out = ["Acceptance at a position: verify steps that accepted that draft / steps whose budget reached it "
           "(a position beyond an adaptive budget is unobserved, not rejected); \"then\": accepted given the "
           "previous position was.", "", *table(head, rows), ""]
    compared = [(r.name, r.row.get("accept_position_verdicts")) for r in _last_results(events)]
    compared = [(name, v) for name, v in compared if v]
    if compared:
        out += table(["trial", "vs its reference, per position (Welch, Holm over positions)"],
                     [[name, summary_text(v)] for name, v in compared]) + [""]
    return out


def _last_results(events: list[_Event]) -> list[TrialResult]:
    return list({e.name: e for e in events if isinstance(e, TrialResult)}.values())
