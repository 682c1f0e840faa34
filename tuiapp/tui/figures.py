"""What the dashboard derives from events before it draws them: a failed request's reason,
the latency percentiles of the latest requests, the request rate, and progress with an ETA.

Textual-free, so the store and the tests use it without an app. The figures' names and
units are written once, in :mod:`tuiapp.common.labels`.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass

from tuiapp.common.stats import percentile
from tuiapp.events import RequestDone

LATENCY_WINDOW = 200  # requests behind the live percentiles: a point's worth at high load
RATE_WINDOW_S = 30.0  # seconds of completions behind the live request rate

# A failed request's reason from its error text, until the request event carries an outcome
# of its own (issue 45): the first pattern that matches names it.
_REASONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("refused", re.compile(r"^HTTP (429|503)\b")),
    ("http_error", re.compile(r"^HTTP \d+")),
    ("timeout", re.compile(r"^timeout\b")),
    ("connect", re.compile(r"^cannot connect\b")),
    ("aborted", re.compile(r"^aborted\b")),
    ("server_error", re.compile(r"^server error\b")),
    ("bad_response", re.compile(r"^(bad response|malformed chunk)\b")),
)


def is_failed(ev: RequestDone) -> bool:
    """A failed request: by its outcome where the event carries one (common/outcome.py: an
    empty or NaN stream is failed though the HTTP exchange was fine), else by ``ok``."""
    outcome = getattr(ev, "outcome", None)
    if outcome:
        return outcome not in ("ok", "cancelled")
    return not ev.ok


def failure_reason(ev: RequestDone) -> str:
    """Why a request failed, in one word (the hook for issue 45's request outcomes: an event
    that carries ``outcome``/``reason`` is taken at its word)."""
    given = getattr(ev, "outcome", None) or getattr(ev, "reason", None)
    if isinstance(given, str) and given and given != "ok":
        return given
    if ev.numerical_fault:
        return "nan"
    text = ev.error or ""
    for name, pattern in _REASONS:
        if pattern.match(text):
            return name
    return "other" if text else "unknown"


def reasons_text(reasons: Counter[str], limit: int = 4) -> str:
    """``refused 12 · timeout 2``: the commonest reasons first."""
    return " · ".join(f"{name} {n}" for name, n in reasons.most_common(limit))


class LatencyWindow:
    """TTFT, TPOT and end-to-end latency of the latest successful requests of one trial and
    load point (a new one starts empty: never the previous trial's figures)."""

    def __init__(self, size: int = LATENCY_WINDOW) -> None:
        self.ttft_s: deque[float] = deque(maxlen=size)
        self.tpot_s: deque[float] = deque(maxlen=size)
        self.e2e_s: deque[float] = deque(maxlen=size)

    def add(self, ev: RequestDone) -> None:
        for series, value in ((self.ttft_s, ev.ttft_s), (self.tpot_s, ev.tpot_s), (self.e2e_s, ev.e2e_s)):
            if value is not None:
                series.append(value)

    def clear(self) -> None:
        for series in (self.ttft_s, self.tpot_s, self.e2e_s):
            series.clear()

    def __len__(self) -> int:
        return len(self.ttft_s)

    def percentiles_ms(self, qs: Sequence[float] = (50, 90, 99)) -> dict[str, list[float | None]]:
        """name -> [p50, p90, p99] in ms, over the window."""
        out = {}
        for name, series in (("TTFT", self.ttft_s), ("TPOT", self.tpot_s), ("E2E", self.e2e_s)):
            values = list(series)
            out[name] = [None if (v := percentile(values, q)) is None else v * 1000.0 for q in qs]
        return out


def rate_per_s(times_s: Sequence[float], now_s: float | None, window_s: float = RATE_WINDOW_S) -> float | None:
    """Events per second over the last ``window_s`` of event time; ``times_s`` ascending."""
    if now_s is None:
        return None
    # bisect: a deque indexes in O(1) near its ends and the window is its newest part
    lo, hi = 0, len(times_s)
    while lo < hi:
        mid = (lo + hi) // 2
        if times_s[mid] > now_s - window_s:
            hi = mid
        else:
            lo = mid + 1
    return (len(times_s) - lo) / window_s


@dataclass
class Progress:
    """Where a long job stands: a plan's trials, a sweep's load points or a search's probes."""

    label: str  # "trial 3/8 · point 2/5 (concurrency 8)"
    done_fraction: float | None  # 0..1 where the whole is known
    elapsed_s: float | None
    eta_s: float | None  # seconds left, from the pace so far; None while there is no pace yet


_POINT_NOTE = re.compile(r"^load point (\d+)(?: of (\d+))?: (.*?), (\d+) run\(s\)$")


def point_note(text: str) -> tuple[int, int | None, str, int] | None:
    """(1-based point, total or None for a search, load in words, runs) from the loop's
    "load point 3 of 6: concurrency 8, 3 run(s)" note (the hook until events carry them)."""
    m = _POINT_NOTE.match(text)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None, m.group(3), int(m.group(4))
