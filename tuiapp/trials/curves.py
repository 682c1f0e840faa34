"""Two trials' load curves, point by point: a Welch verdict at each load, and where they cross.

A point is the summary dict of a PointDone (tuiapp.bench.points.point_summary); points of
two trials match by their load (``concurrency`` or ``request_rate``). The verdict compares
the per-run aggregate output tok/s (``output_tok_s_runs``): at high load the aggregate,
not the single-stream decode rate, is what a configuration buys.
"""

from __future__ import annotations

from typing import Any

from tuiapp.common import stats

ALPHA = 0.05


def load_of(point: dict[str, Any]) -> tuple[str, float] | None:
    if point.get("request_rate") is not None:
        return ("request_rate", float(point["request_rate"]))
    if point.get("concurrency") is not None:
        return ("concurrency", float(point["concurrency"]))
    return None


def _label(load: tuple[str, float]) -> str:
    name, value = load
    return f"{value:g} req/s" if name == "request_rate" else f"concurrency {value:g}"


def compare_points(base: list[dict[str, Any]], trial: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per shared load: {load, verdict, delta_pct, p_value}; and lines saying where the
    trial's curve crosses the reference's (the sign of the difference flips)."""
    base_by = {k: p for p in base if (k := load_of(p)) is not None and not p.get("search_probe")}
    out: list[dict[str, Any]] = []
    for p in trial:
        key = load_of(p)
        if key is None or key not in base_by or p.get("search_probe"):
            continue
        a, b = base_by[key].get("output_tok_s_runs") or [], p.get("output_tok_s_runs") or []
        ma, mb = stats.mean(a), stats.mean(b)
        item: dict[str, Any] = {key[0]: key[1], "verdict": None, "delta_pct": None, "p_value": None}
        if ma and mb is not None:
            item["delta_pct"] = 100.0 * (mb - ma) / ma
            item["verdict"] = stats.verdict(a, b, alpha=ALPHA)
            if len(a) >= 2 and len(b) >= 2:
                item["p_value"] = stats.welch(a, b)[2]
        out.append(item)
    out.sort(key=lambda i: i.get("concurrency", i.get("request_rate")) or 0.0)
    return out, crossings(out)


def crossings(points: list[dict[str, Any]]) -> list[str]:
    """Between two neighbouring loads where the trial goes from faster to slower beyond
    noise (or back): the order of the two configurations flips there."""
    lines: list[str] = []
    decided = [p for p in points if p["verdict"] in ("faster", "slower")]
    for prev, cur in zip(decided, decided[1:], strict=False):
        if prev["verdict"] != cur["verdict"]:
            k = "concurrency" if "concurrency" in cur else "request_rate"
            lo, hi = (k, prev[k]), (k, cur[k])
            lines.append(f"curves cross between {_label(lo)} ({prev['verdict']}, {prev['delta_pct']:+.1f}%)"
                         f" and {_label(hi)} ({cur['verdict']}, {cur['delta_pct']:+.1f}%)")
    return lines


def curve_lines(rows: Any) -> list[str]:
    """The ledger's markdown for load curves: per trial, its verdict at each load and the crossings."""
    out: list[str] = []
    for r in rows:
        if not r.point_verdicts:
            continue
        cells = []
        for v in r.point_verdicts:
            k = "concurrency" if "concurrency" in v else "request_rate"
            delta = f" {v['delta_pct']:+.1f}%" if v["delta_pct"] is not None else ""
            cells.append(f"{_label((k, v[k]))}: {v['verdict'] or 'n/a'}{delta}")
        out.append(f"- {r.name} vs {r.baseline or 'the baseline'}, output tok/s per load: " + "; ".join(cells))
        out += [f"  - {line}" for line in r.crossings]
    return ["", "Load curves:", *out] if out else []
