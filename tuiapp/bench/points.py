"""A load point's figures (percentiles, goodput) and --find-max-load's next probe.

Pure functions over finished requests: the loop feeds them, tests call them directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from tuiapp.bench.client import RequestResult
from tuiapp.bench.settings import BenchSettings
from tuiapp.common import stats
from tuiapp.events import PointDone

GOOD_SHARE = 0.99  # --find-max-load: the largest load whose goodput share stays at or above this


def percentile(xs: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not xs:
        return None
    v = sorted(xs)
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def meets_slo(r: RequestResult, s: BenchSettings) -> bool:
    """Every goal met; a failed request meets none. A one-token reply has no TPOT to miss."""
    if not r.ok or r.ttft_s is None or r.e2e_s is None:
        return False
    if s.slo_ttft_ms is not None and r.ttft_s * 1000.0 > s.slo_ttft_ms:
        return False
    tpot = r.tpot_s
    if s.slo_tpot_ms is not None and tpot is not None and tpot * 1000.0 > s.slo_tpot_ms:
        return False
    return s.slo_e2e_ms is None or r.e2e_s * 1000.0 <= s.slo_e2e_ms


@dataclass
class PointTally:
    """What one point's runs left: their requests, wall times and (open loop) send times."""

    requests: list[RequestResult] = field(default_factory=list)
    run_walls_s: list[float] = field(default_factory=list)
    run_output_tok_s: list[float] = field(default_factory=list)
    send_spans: list[tuple[int, float]] = field(default_factory=list)  # (requests sent, first-to-last send s)
    due_spans: list[tuple[int, float]] = field(default_factory=list)  # the same of the drawn schedule

    def add_run(self, done: list[RequestResult], wall_s: float, output_tok_s: float | None,
                sends_s: list[float] | None = None, dues_s: list[float] | None = None) -> None:
        self.requests.extend(done)
        self.run_walls_s.append(wall_s)
        if output_tok_s is not None:
            self.run_output_tok_s.append(output_tok_s)
        if sends_s and len(sends_s) > 1:
            self.send_spans.append((len(sends_s), max(sends_s) - min(sends_s)))
        if dues_s and len(dues_s) > 1:
            self.due_spans.append((len(dues_s), dues_s[-1] - dues_s[0]))


def _rate(spans: list[tuple[int, float]]) -> float | None:
    """Pooled over runs: (n - 1) gaps per run over the runs' spans."""
    span_s = sum(t for _, t in spans)
    return sum(n - 1 for n, _ in spans) / span_s if spans and span_s > 0 else None


def _ms3(xs: list[float], prefix: str) -> dict[str, float | None]:
    ms = [x * 1000.0 for x in xs]
    return {f"{prefix}_p{q}_ms": percentile(ms, q) for q in (50, 90, 99)}


def point_event(index: int, s: BenchSettings, tally: PointTally, trial: str | None, *, search: bool = False) -> PointDone:
    counted = [r for r in tally.requests if not r.cancelled]
    good = [r for r in counted if r.ok]
    wall_s = sum(tally.run_walls_s)
    tokens = sum(r.completion_tokens or 0 for r in good)
    open_loop = s.request_rate is not None
    achieved = _rate(tally.send_spans) if open_loop else None
    scheduled = _rate(tally.due_spans) if open_loop else None
    figures: dict = {}
    figures |= _ms3([r.ttft_s for r in good if r.ttft_s is not None], "ttft")
    figures |= _ms3([t for r in good if (t := r.tpot_s) is not None], "tpot")
    figures |= _ms3([g for r in good if (g := r.chunk_gap_mean_s) is not None], "itl")
    figures |= _ms3([r.e2e_s for r in good if r.e2e_s is not None], "e2e")
    goodput = share = None
    if s.has_slo and counted:
        met = sum(1 for r in counted if meets_slo(r, s))
        goodput = met / wall_s if wall_s > 0 else None
        share = met / len(counted)
    return PointDone(
        point_index=index,
        concurrency=s.concurrency if s.request_rate is None else None,
        request_rate=s.request_rate,
        max_concurrency=s.max_concurrency if s.request_rate is not None else None,
        achieved_request_rate=achieved,
        scheduled_request_rate=scheduled,
        runs=len(tally.run_walls_s),
        requests=len(counted),
        errors=len(counted) - len(good),
        duration_s=wall_s,
        output_tok_s=tokens / wall_s if good and wall_s > 0 else None,
        output_tok_s_runs=list(tally.run_output_tok_s),
        request_throughput_req_s=len(good) / wall_s if wall_s > 0 else None,
        decode_tok_s=stats.mean([d for r in good if (d := r.decode_tok_s) is not None]),
        goodput_req_s=goodput,
        goodput_share=share,
        trial=trial,
        search=search,
        **figures,
    )


# Summary fields of a point: the event less the bus's bookkeeping.
_NOT_IN_SUMMARY = {"kind", "t_s", "trial", "search", "point_index"}


def point_summary(ev: PointDone) -> dict:
    out = {k: v for k, v in ev.model_dump(mode="json").items() if k not in _NOT_IN_SUMMARY}
    if ev.request_rate is None:
        out.pop("request_rate")
        out.pop("achieved_request_rate")
        out.pop("scheduled_request_rate")
        out.pop("max_concurrency")
    else:
        out.pop("concurrency")
    if ev.search:
        out["search_probe"] = True
    return out


# ---------------------------------------------------------------- --find-max-load


def next_probe(history: Sequence[tuple[float, bool]], start: float, *, whole: bool, max_points: int) -> float | None:
    """The next load to try, or None when the search is done.

    ``history`` holds (load, goodput share >= 99%) of the probes so far. Doubles from
    ``start`` until a load fails (halves while the first ones fail), then bisects between
    the largest good and the smallest bad load until they are within 10% (or 1 for whole
    numbers), at most ``max_points`` probes in all.
    """
    if not history:
        return start
    if len(history) >= max_points:
        return None
    good = [x for x, ok in history if ok]
    bad = [x for x, ok in history if not ok]
    lo = max(good) if good else None
    hi = min(bad) if bad else None
    if hi is None:
        nxt = lo * 2  # type: ignore[operator]
    elif lo is None:
        nxt = hi / 2
        if whole and nxt < 1:
            return None  # even 1 fails: nothing meets the goals
        if not whole and nxt < start / 64:
            return None
    else:
        if (hi - lo <= 1) if whole else (hi / lo <= 1.1):
            return None
        nxt = (lo + hi) / 2
    if whole:
        nxt = float(max(1, round(nxt)))
        if any(nxt == x for x, _ in history):
            return None
    return nxt


def max_load(history: Sequence[tuple[float, bool]]) -> float | None:
    good = [x for x, ok in history if ok]
    return max(good) if good else None


def load_text(p: BenchSettings) -> str:
    """The point's load in words: "concurrency 16", "4 req/s, at most 8 in flight"."""
    if p.request_rate is None:
        return f"concurrency {p.concurrency}"
    cap = f", at most {p.max_concurrency} in flight" if p.max_concurrency else ""
    shape = f", burstiness {p.burstiness:g}" if p.burstiness != 1 else ""
    return f"{p.request_rate:g} req/s{shape}{cap}"
