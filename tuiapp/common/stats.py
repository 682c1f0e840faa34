"""Small-sample statistics for comparing runs and trials, without scipy.

Trials have 3-10 runs each, so the Student t distribution (not the normal) sets the
interval width, and Welch's test (unequal variances) decides whether two trials differ.
The t CDF goes through the regularized incomplete beta function (Lentz continued
fraction), accurate to ~1e-12, which is far finer than any tok/s difference needs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence


def mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def sd(xs: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1); None below two values."""
    n = len(xs)
    if n < 2:
        return None
    m = sum(xs) / n
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))


def ci95(xs: Sequence[float]) -> tuple[float, float] | None:
    """95% confidence interval of the mean (Student t); None below two values."""
    n = len(xs)
    s = sd(xs)
    if s is None:
        return None
    m = sum(xs) / n
    half = t_quantile(0.975, n - 1) * s / math.sqrt(n)
    return (m - half, m + half)


# ---------------------------------------------------------------- t distribution


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf_two_sided(t: float, dof: float) -> float:
    """P(|T| >= |t|) for Student t with ``dof`` (may be fractional) degrees of freedom."""
    if math.isnan(t):
        return float("nan")
    if math.isinf(t):
        return 0.0
    return betainc(dof / 2.0, 0.5, dof / (dof + t * t))


def t_cdf(t: float, dof: float) -> float:
    tail = 0.5 * t_sf_two_sided(t, dof)
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=256)  # a few dofs (runs per trial - 1) asked for again and again
def t_quantile(p: float, dof: float) -> float:
    """Inverse CDF of Student t (bisection on the CDF: slow-ish but exact and robust)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, dof) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, dof) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------- comparing two trials


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Welch's unequal-variance t test of mean(b) - mean(a).

    Returns (t, dof, two-sided p). Needs at least two values on each side. With zero
    variance on both sides the test degenerates: equal means give (0, inf, 1), different
    means (+-inf, inf, 0) since noise-free runs that differ do differ.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("welch needs at least two values per group")
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sd(a) ** 2 / na  # type: ignore[operator]
    vb = sd(b) ** 2 / nb  # type: ignore[operator]
    se2 = va + vb
    if se2 == 0.0:
        if ma == mb:
            return (0.0, math.inf, 1.0)
        return (math.copysign(math.inf, mb - ma), math.inf, 0.0)
    t = (mb - ma) / math.sqrt(se2)
    dof = se2 * se2 / ((va * va) / (na - 1) + (vb * vb) / (nb - 1))
    return (t, dof, t_sf_two_sided(t, dof))


# ---------------------------------------------------------------- bounded percentiles


class Digest:
    """Values for percentiles in bounded memory: exact up to ``exact_max`` values, then
    log-spaced buckets of 0.5% relative width (an attach that runs for days keeps a few
    thousand numbers, not one per request). Percentiles interpolate as numpy's default."""

    __slots__ = ("_values", "_buckets", "count", "_exact_max")

    _STEP = math.log1p(0.005)

    def __init__(self, exact_max: int = 4096) -> None:
        self._values: list[float] | None = []
        self._buckets: dict[int, int] = {}
        self.count = 0
        self._exact_max = exact_max

    def add(self, x: float) -> None:
        self.count += 1
        if self._values is not None:
            self._values.append(x)
            if len(self._values) > self._exact_max:
                values, self._values = self._values, None
                for v in values:
                    self._bucket(v)
            return
        self._bucket(x)

    def _bucket(self, x: float) -> None:
        key = -(1 << 30) if x <= 0 else round(math.log(x) / self._STEP)
        self._buckets[key] = self._buckets.get(key, 0) + 1

    def percentile(self, q: float) -> float | None:
        if self._values is not None:
            return percentile(self._values, q)
        if not self.count:
            return None
        rank = (self.count - 1) * q / 100.0
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if seen > rank:
                return 0.0 if key == -(1 << 30) else math.exp(key * self._STEP)
        return None


def percentile(xs: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not xs:
        return None
    v = sorted(xs)
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)
