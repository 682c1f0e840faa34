"""Is B faster than A, does a probe pass, is a trial valid: the one owner of every verdict.

The ledger, its load curves, the search ranking, dead-end flags, --find-max-load and
``tuiapp compare`` all call these functions; none decides on its own.

- :func:`welch_compare`: two sets of per-run figures. Welch's t test (unequal variances);
  "faster"/"slower" needs p < alpha (after Holm, where several loads are judged at once)
  AND a difference of at least ``min_effect_pct`` (a handful of very steady runs makes a
  0.1% shift "significant"); fewer than two runs a side is "n/a", never a guess. For a
  latency (lower is better) "faster" means lower.
- :func:`compare_points`: two load curves, point by point at the loads both have; Holm's
  step-down correction over the points (five loads at alpha 0.05 would call one in four
  noise-only comparisons a difference).
- :func:`error_rate_verdict`: NEW fails more requests than BASE beyond chance (Fisher's
  exact test, one-sided) and by at least a percentage point.
- :func:`invalid_reasons`: what makes a measurement unusable whatever its speed.
- :func:`meets_goal`: does a load point (a --find-max-load probe) meet the SLO;
  :func:`headline_point`: a sweep trial's one headline point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tuiapp.common import stats

ALPHA = 0.05
MIN_EFFECT_PCT = 0.5
GOOD_SHARE = 0.99  # a load meets the SLO when this share of its requests met every goal
SERVED_SHARE = 0.95  # an open-loop probe passes only when served >= 95% of offered
ERROR_RATE_MIN_PP = 1.0  # percentage points: a smaller rise in failures is not "worse"
MIN_RUNS = 2


@dataclass(frozen=True)
class Comparison:
    base_mean: float | None
    new_mean: float | None
    ratio: float | None  # new / base
    ci95: tuple[float, float] | None  # of the ratio
    p_value: float | None
    verdict: str  # faster | slower | within noise | n/a (...)
    n_base: int
    n_new: int
    p_adjusted: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def welch_compare(base: Sequence[float], new: Sequence[float], *, higher_better: bool = True,
                  min_effect_pct: float = MIN_EFFECT_PCT, alpha: float = ALPHA,
                  p_adjusted: float | None = None) -> Comparison:
    """BASE's and NEW's per-run figures; ``p_adjusted`` (Holm) replaces p in the decision."""
    mb, mn = stats.mean(base), stats.mean(new)
    nb, nn = len(base), len(new)
    if mb is None or mn is None:
        return Comparison(mb, mn, None, None, None, "n/a (no runs)", nb, nn)
    ratio = mn / mb if mb else None
    if nb < MIN_RUNS or nn < MIN_RUNS:
        return Comparison(mb, mn, ratio, None, None, f"n/a (needs {MIN_RUNS} runs a side)", nb, nn)
    t, dof, p = stats.welch(base, new)
    se = math.sqrt(stats.sd(base) ** 2 / nb + stats.sd(new) ** 2 / nn)
    half = 0.0 if se == 0 else stats.t_quantile(0.975, dof) * se
    ci = ((mn - mb - half) / mb + 1, (mn - mb + half) / mb + 1) if mb else None
    effect_pct = abs(100.0 * (mn - mb) / mb) if mb else 0.0
    decide = p if p_adjusted is None else p_adjusted
    verdict = "within noise"
    if decide < alpha and effect_pct >= min_effect_pct and t != 0:
        verdict = "faster" if (t > 0) == higher_better else "slower"
    return Comparison(mb, mn, ratio, ci, p, verdict, nb, nn, p_adjusted)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None): controls the chance of any false
    "faster"/"slower" among the points at alpha."""
    order = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def load_of(point: dict[str, Any]) -> tuple[str, float] | None:
    """A point's load: ("request_rate", R) or ("concurrency", N)."""
    if point.get("request_rate") is not None:
        return ("request_rate", float(point["request_rate"]))
    if point.get("concurrency") is not None:
        return ("concurrency", float(point["concurrency"]))
    return None


def load_label(load: tuple[str, float]) -> str:
    name, value = load
    return f"{value:g} req/s" if name == "request_rate" else f"concurrency {value:g}"


def compare_points(base: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], *,
                   metric: str = "output_tok_s", higher_better: bool = True,
                   min_effect_pct: float = MIN_EFFECT_PCT, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Per load both curves have (search probes aside), NEW vs BASE on ``metric``'s per-run
    figures (``<metric>_runs``), Holm over the points. Each item: the load, base/new means,
    delta_pct, p_value, p_adjusted, verdict; sorted by load. Loads BASE has and NEW lacks
    come as verdict "missing"."""
    def usable(points: Sequence[dict[str, Any]]) -> dict[tuple[str, float], dict[str, Any]]:
        return {k: p for p in points if (k := load_of(p)) is not None and not p.get("search_probe")}

    b_by, n_by = usable(base), usable(new)
    keys = sorted(set(b_by) | set(n_by), key=lambda k: (k[0], k[1]))
    runs = {k: ([float(x) for x in (b_by.get(k) or {}).get(f"{metric}_runs") or []],
                [float(x) for x in (n_by.get(k) or {}).get(f"{metric}_runs") or []]) for k in keys}
    raw = {k: (welch_compare(a, b, higher_better=higher_better, min_effect_pct=min_effect_pct, alpha=alpha).p_value
               if k in b_by and k in n_by else None) for k, (a, b) in runs.items()}
    adjusted = dict(zip(raw, holm(list(raw.values())), strict=True))
    out: list[dict[str, Any]] = []
    for k in keys:
        item: dict[str, Any] = {k[0]: k[1], "metric": metric}
        if k not in n_by:
            item.update(verdict="missing", delta_pct=None, p_value=None, p_adjusted=None)
        elif k not in b_by:
            continue  # a load only NEW has: nothing to compare it with
        else:
            c = welch_compare(*runs[k], higher_better=higher_better, min_effect_pct=min_effect_pct, alpha=alpha,
                              p_adjusted=adjusted[k])
            delta = 100.0 * (c.new_mean - c.base_mean) / c.base_mean if c.base_mean and c.new_mean is not None else None
            item.update(verdict=c.verdict if not c.verdict.startswith("n/a") or delta is None else "n/a",
                        delta_pct=delta, p_value=c.p_value, p_adjusted=c.p_adjusted,
                        base_mean=c.base_mean, new_mean=c.new_mean)
        out.append(item)
    return out


def crossings(points: Sequence[dict[str, Any]]) -> list[str]:
    """Between two neighbouring loads where NEW goes from faster to slower beyond noise (or
    back): the order of the two configurations flips there."""
    lines: list[str] = []
    decided = [p for p in points if p["verdict"] in ("faster", "slower")]
    for prev, cur in zip(decided, decided[1:], strict=False):
        if prev["verdict"] != cur["verdict"]:
            k = "concurrency" if "concurrency" in cur else "request_rate"
            lines.append(f"curves cross between {load_label((k, prev[k]))} ({prev['verdict']}, "
                         f"{prev['delta_pct']:+.1f}%) and {load_label((k, cur[k]))} ({cur['verdict']}, "
                         f"{cur['delta_pct']:+.1f}%)")
    return lines


def _fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact p that NEW's failure share (c of c+d) exceeds BASE's (a of a+b)
    by chance: P(X >= c) for the hypergeometric of the 2x2 table [[a, b], [c, d]]."""
    n1, n2, k = a + b, c + d, a + c
    total = math.comb(n1 + n2, k)
    if total == 0:
        return 1.0
    p = 0.0
    for x in range(c, min(k, n2) + 1):
        p += math.comb(n2, x) * math.comb(n1, k - x)
    return min(1.0, p / total)


def error_rate_verdict(base_failed: int, base_total: int, new_failed: int, new_total: int, *,
                       alpha: float = ALPHA) -> tuple[str, float | None]:
    """("worse" | "within noise" | "n/a", p): does NEW fail more requests than BASE?"""
    if base_total <= 0 or new_total <= 0:
        return "n/a", None
    rise_pp = 100.0 * (new_failed / new_total - base_failed / base_total)
    if rise_pp <= 0:
        return "within noise", None
    p = _fisher_greater(base_failed, base_total - base_failed, new_failed, new_total - new_failed)
    return ("worse" if p < alpha and rise_pp >= ERROR_RATE_MIN_PP else "within noise"), p


def invalid_reasons(*, requests: int, failed: int, output_tokens: int | None, runs: int,
                    numerical_faults: int = 0, min_runs: int = 0) -> list[str]:
    """Why a trial's (or a file's) measurement cannot be judged at all: it can never rank
    best nor be "faster". ``min_runs`` 0: not checked (a single-run trial is valid, only
    not comparable)."""
    out: list[str] = []
    if requests and failed >= requests:
        out.append(f"all {requests} requests failed")
    elif requests and output_tokens == 0:
        out.append("zero output tokens")
    if numerical_faults:
        out.append(f"{numerical_faults} request(s) finished with NaN")
    if min_runs and runs < min_runs:
        out.append(f"{runs} run(s), fewer than the {min_runs} a verdict needs")
    return out


# ---------------------------------------------------------------- --find-max-load


def max_load_answer(history: Sequence[tuple[float, bool]], name: str) -> dict[str, Any]:
    """--find-max-load's answer from its probes: the largest passing load, bracketed by the
    smallest failing one above it; with no failing probe above, only "at least"."""
    good = [x for x, ok in history if ok]
    found = max(good) if good else None
    above = [x for x, ok in history if not ok and (found is None or x > found)]
    failing = min(above) if above else None
    unit = "req/s" if name == "request_rate" else "streams"
    if found is None:
        text = (f"max load meeting the SLO: none (even {failing:g} {unit} failed)" if failing is not None
                else "max load meeting the SLO: none")
    elif failing is None:
        text = (f"max load meeting the SLO: at least {found:g} {unit} (no probe failed; the search ended"
                f" before it found a limit)")
    else:
        text = f"max load meeting the SLO: {found:g} {unit} ({failing:g} failed)"
    return {name: found, "bracketed": failing is not None, "first_failing": failing, "probes": len(history),
            "good_share": GOOD_SHARE, "served_share": SERVED_SHARE, "text": f"{text}, {len(history)} probes"}


def _get(point: Any, name: str) -> Any:
    return point.get(name) if isinstance(point, dict) else getattr(point, name, None)


def meets_goal(point: Any, *, good_share: float = GOOD_SHARE) -> tuple[bool, str]:
    """(passed, why) for one load point (a PointDone or its summary dict): the SLO share of
    every request sent (refused and failed ones are misses) meets ``good_share``; open loop
    also needs served >= 95% of the offered rate (a server that takes 11 of 40 req/s does not
    "meet" 40 however fast the 11 were). Closed loop holds ``concurrency`` requests in flight
    (BenchSettings.at_load). The probes of --find-max-load and a sweep's headline use it."""
    share = _get(point, "goodput_share") or 0.0
    why = [f"SLO met by {share:.0%} of {_get(point, 'requests')}"]
    ok = share >= good_share
    if _get(point, "errors"):
        why.append(f"{_get(point, 'errors')} failed")
    rate = _get(point, "request_rate")
    if rate is not None:
        offered = _get(point, "offered_request_rate") or rate
        served = _get(point, "served_request_rate") or 0.0
        why.append(f"served {served:.3g} of {offered:.3g} req/s offered")
        if served < SERVED_SHARE * offered:
            ok = False
    return ok, ", ".join(why)


def headline_point(points: Sequence[dict[str, Any]], want: str | None = None) -> dict[str, Any] | None:
    """A sweep trial's headline: the point ``want`` names ("concurrency=64", "request_rate=8"),
    else the highest load that met the SLO (meets_goal), else, without an SLO, the highest
    load; never a pool of all loads. A --find-max-load trial's probes are its points (its
    headline is the largest load that passed). None when no point qualifies (want absent, or
    an SLO that no load met)."""
    usable = [p for p in points if load_of(p) is not None and not p.get("search_probe")]
    if not usable:  # a --find-max-load trial: its probes are its points
        usable = [p for p in points if load_of(p) is not None]
    if want:
        name, _, value = want.partition("=")
        return next((p for p in usable if load_of(p) == (name, float(value))), None)
    with_slo = [p for p in usable if p.get("goodput_share") is not None]
    pool = [p for p in with_slo if meets_goal(p)[0]] if with_slo else usable
    return max(pool, key=lambda p: load_of(p)[1]) if pool else None  # type: ignore[index]
