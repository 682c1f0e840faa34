"""The ledger's Markdown for load curves: per trial, its verdict at each load and where its
curve crosses the reference's. The verdicts themselves are tuiapp.common.verdict's
(compare_points: per-run aggregate output tok/s per load, Holm over the loads)."""

from __future__ import annotations

from typing import Any

from tuiapp.common.verdict import load_label, load_of


def curve_lines(rows: Any) -> list[str]:
    """Per trial with point verdicts: each load's verdict and delta, and the crossings."""
    out: list[str] = []
    for r in rows:
        if not r.point_verdicts:
            continue
        cells = []
        for v in r.point_verdicts:
            load = load_of(v)
            if load is None:
                continue
            delta = f" {v['delta_pct']:+.1f}%" if v.get("delta_pct") is not None else ""
            cells.append(f"{load_label(load)}: {v['verdict'] or 'n/a'}{delta}")
        out.append(f"- {r.name} vs {r.baseline or 'the baseline'}, output tok/s per load: " + "; ".join(cells))
        out += [f"  - {line}" for line in r.crossings]
    return ["", "Load curves:", *out] if out else []
