"""Two trials compared on speculative acceptance, draft position by draft position.

Each run's requests pool into one histogram (tuiapp.common.acceptance); a run gives one
acceptance figure per position (accepted / observed steps). Per position both trials have,
tuiapp.common.verdict.welch_compare judges the per-run figures (higher is better), with Holm's
correction over the positions; fewer than two runs a side is "n/a", never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tuiapp.common import acceptance
from tuiapp.common import verdict as judge


def runs_by_position(runs: Iterable[tuple[Sequence[int] | None, Sequence[int] | None]]) -> list[list[float]]:
    """Per position (1 first), each run's acceptance; a run that never observed a position adds nothing there."""
    out: list[list[float]] = []
    for hist, caps in runs:
        for p in acceptance.per_position(hist, caps):
            while len(out) < p.position:
                out.append([])
            if p.rate is not None:
                out[p.position - 1].append(p.rate)
    return out


def pooled_by_position(runs: Iterable[tuple[Sequence[int] | None, Sequence[int] | None]]) -> list[float | None]:
    """Per position, the acceptance of all the runs' verify steps together."""
    return [p.rate for p in acceptance.per_position(*acceptance.pool_pairs(runs))]


def compare_positions(base: Sequence[Sequence[float]], new: Sequence[Sequence[float]], *,
                      min_effect_pct: float = judge.MIN_EFFECT_PCT) -> list[dict[str, Any]]:
    """Per position both trials observed: base/new mean acceptance, the difference in points,
    p, Holm-adjusted p and the verdict (``higher``/``lower``/``within noise``/``n/a ...``)."""
    n = min(len(base), len(new))
    raw = [judge.welch_compare(base[k], new[k], min_effect_pct=min_effect_pct).p_value for k in range(n)]
    adjusted = judge.holm(raw)
    out: list[dict[str, Any]] = []
    for k in range(n):
        c = judge.welch_compare(base[k], new[k], min_effect_pct=min_effect_pct, p_adjusted=adjusted[k])
        word = {"faster": "higher", "slower": "lower"}.get(c.verdict, c.verdict)
        delta = 100.0 * (c.new_mean - c.base_mean) if c.new_mean is not None and c.base_mean is not None else None
        out.append({"position": k + 1, "base": c.base_mean, "new": c.new_mean, "delta_pts": delta,
                    "p_value": c.p_value, "p_adjusted": c.p_adjusted, "verdict": word})
    return out


def summary_text(verdicts: Sequence[dict[str, Any]]) -> str:
    """One line for a ledger cell: ``p1 +2.1 pts higher; p2 -0.3 within noise``."""
    parts = []
    for v in verdicts:
        delta = f"{v['delta_pts']:+.1f} pts" if v.get("delta_pts") is not None else "n/a"
        parts.append(f"p{v['position']} {delta} {v['verdict']}")
    return "; ".join(parts)
