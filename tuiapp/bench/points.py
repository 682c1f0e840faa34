"""A load point: one function builds it from a load's runs (the loop, sweeps, --find-max-load
and the concurrency search all call it), and --find-max-load's next probe.

Pure over finished requests: the loop feeds them, tests call them directly. A point keeps
bounded memory (counts, sums and digests, never the requests), so an attach that runs for
days holds a few thousand numbers.

Rates of a point (open loop; docs/load-curves.md):
  offered = the rate of the arrivals drawn (a Poisson draw of 32 is not exactly R)
  sent    = requests sent / sending time: did the client keep its own schedule
  served  = successful requests / the time they took to come back ((n - 1) / first-to-last
            finish, pooled over runs, as sent is measured over sends): what the server did.
            The first tenth of a run is left out of both sides: the first requests meet an empty
            server, the last ones the queue that random arrivals built, and that difference
            (not the server's rate) would stretch a short run's finish span near capacity. So
            served = offered x (rate of the last nine tenths of the successful finishes / rate of
            the last nine tenths of the schedule): the two rates over matching windows
  client lag = a request's send time - its scheduled time; open-loop TTFT and e2e include
            it, so queueing behind --max-concurrency or a slow client is latency, not hidden
Closed loop: served = successful requests / wall time.

What counts: a request by tuiapp.common.outcome (cancelled ones never; failed ones in every
share and rate, by reason); a run when every one of its requests finished (a run cut by a stop
or a restart is not a run, BenchLoop._one_run); a point when at least one of its runs counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tuiapp.bench.client import RequestResult
from tuiapp.bench.settings import BenchSettings
from tuiapp.common import acceptance
from tuiapp.common.outcome import classify, reason_text
from tuiapp.common.stats import Digest, percentile
from tuiapp.events import PointDone

__all__ = ["PointTally", "load_text", "max_load", "meets_slo", "next_probe", "percentile",
           "point_event", "point_summary"]

def meets_slo(r: RequestResult, s: BenchSettings) -> bool:
    """Every goal met; a failed request meets none. A one-token reply has no TPOT to miss."""
    if classify(r) != "ok" or r.ttft_s is None or r.e2e_s is None:
        return False
    if s.slo_ttft_ms is not None and r.ttft_s * 1000.0 > s.slo_ttft_ms:
        return False
    tpot = r.tpot_s
    if s.slo_tpot_ms is not None and tpot is not None and tpot * 1000.0 > s.slo_tpot_ms:
        return False
    return s.slo_e2e_ms is None or r.e2e_s * 1000.0 <= s.slo_e2e_ms


@dataclass
class PointTally:
    """What one point's runs left, in bounded memory: outcome counts, digests of the
    successful requests' latencies, and per-run walls, rates and spans."""

    settings: BenchSettings | None = None  # its SLO decides goodput
    outcomes: Counter = field(default_factory=Counter)
    first_errors: dict[str, str] = field(default_factory=dict)  # outcome -> its first error text
    ttft_ms: Digest = field(default_factory=Digest)
    tpot_ms: Digest = field(default_factory=Digest)
    itl_ms: Digest = field(default_factory=Digest)
    e2e_ms: Digest = field(default_factory=Digest)
    lag_ms: Digest = field(default_factory=Digest)
    tokens: int = 0
    decode_sum_tok_s: float = 0.0
    decode_n: int = 0
    slo_met: int = 0
    run_walls_s: list[float] = field(default_factory=list)
    run_output_tok_s: list[float] = field(default_factory=list)
    run_decode_tok_s: list[float] = field(default_factory=list)
    send_spans: list[tuple[int, float]] = field(default_factory=list)  # (requests sent, first-to-last send s)
    due_spans: list[tuple[int, float]] = field(default_factory=list)  # the same of the drawn schedule
    finish_spans: list[tuple[int, float]] = field(default_factory=list)  # successful finishes, first tenth left out
    warm_due_spans: list[tuple[int, float]] = field(default_factory=list)  # the schedule, first tenth left out
    spec: acceptance.Tally = field(default_factory=acceptance.Tally)  # acceptance histograms, pooled

    def add_run(self, done: list[RequestResult], wall_s: float, output_tok_s: float | None,
                sends_s: list[float] | None = None, dues_s: list[float] | None = None,
                finishes_s: list[float] | None = None, decode_tok_s: float | None = None) -> None:
        for r in done:
            self.add(r)
        self.run_walls_s.append(wall_s)
        if output_tok_s is not None:
            self.run_output_tok_s.append(output_tok_s)
        if decode_tok_s is not None:
            self.run_decode_tok_s.append(decode_tok_s)
        if sends_s and len(sends_s) > 1:
            self.send_spans.append((len(sends_s), max(sends_s) - min(sends_s)))
        if dues_s and len(dues_s) > 1:
            self.due_spans.append((len(dues_s), dues_s[-1] - dues_s[0]))
        if finishes_s and len(finishes_s) > 1 and dues_s and len(dues_s) > 1:
            warm = sorted(finishes_s)[len(finishes_s) // 10:]
            due = dues_s[len(dues_s) // 10:]
            if len(warm) > 1 and len(due) > 1:
                self.finish_spans.append((len(warm), warm[-1] - warm[0]))
                self.warm_due_spans.append((len(due), due[-1] - due[0]))

    def add(self, r: RequestResult) -> None:
        outcome = classify(r)
        self.outcomes[outcome] += 1
        if outcome == "cancelled":
            return
        if r.lag_s:
            self.lag_ms.add(r.lag_s * 1000.0)
        elif self.settings is not None and self.settings.request_rate is not None:
            self.lag_ms.add(0.0)
        if outcome != "ok":
            self.first_errors.setdefault(outcome, reason_text(r, outcome))
            return
        self.tokens += r.completion_tokens or 0
        if r.ttft_s is not None:
            self.ttft_ms.add(r.ttft_s * 1000.0)
        if (t := r.tpot_s) is not None:
            self.tpot_ms.add(t * 1000.0)
        if (g := r.chunk_gap_mean_s) is not None:
            self.itl_ms.add(g * 1000.0)
        if r.e2e_s is not None:
            self.e2e_ms.add(r.e2e_s * 1000.0)
        if (d := r.decode_tok_s) is not None:
            self.decode_sum_tok_s += d
            self.decode_n += 1
        if r.spec_accept_histogram:
            self.spec.add(r.spec_accept_histogram, r.spec_cap_histogram)
        if self.settings is not None and self.settings.has_slo and meets_slo(r, self.settings):
            self.slo_met += 1

    @property
    def counted(self) -> int:
        return sum(n for o, n in self.outcomes.items() if o != "cancelled")


def _rate(spans: list[tuple[int, float]]) -> float | None:
    """Pooled over runs: (n - 1) gaps per run over the runs' spans."""
    span_s = sum(t for _, t in spans)
    return sum(n - 1 for n, _ in spans) / span_s if spans and span_s > 0 else None


def _ms3(d: Digest, prefix: str, qs: Sequence[int] = (50, 90, 99)) -> dict[str, float | None]:
    return {f"{prefix}_p{q}_ms": d.percentile(q) for q in qs}


def point_event(index: int, s: BenchSettings, tally: PointTally, trial: str | None, *, search: bool = False) -> PointDone:
    """The one builder of a point from its load's runs."""
    counted = tally.counted
    good = tally.outcomes["ok"]
    wall_s = sum(tally.run_walls_s)
    open_loop = s.request_rate is not None
    sent = _rate(tally.send_spans) if open_loop else (counted / wall_s if wall_s > 0 else None)
    if open_loop:
        offered, finished, scheduled = _rate(tally.due_spans), _rate(tally.finish_spans), _rate(tally.warm_due_spans)
        if offered and finished and scheduled:
            served = offered * finished / scheduled
        else:
            served = good / wall_s if wall_s > 0 else None
        if served is not None and sent is not None:
            served = min(served, sent)  # a burst of finishes is not a rate above what was sent
    else:
        served = good / wall_s if wall_s > 0 else None
    figures: dict = {}
    figures |= _ms3(tally.ttft_ms, "ttft")
    figures |= _ms3(tally.tpot_ms, "tpot")
    figures |= _ms3(tally.itl_ms, "itl")
    figures |= _ms3(tally.e2e_ms, "e2e")
    if open_loop:
        figures |= _ms3(tally.lag_ms, "client_lag", (50, 99))
    goodput = share = None
    if s.has_slo and counted:
        goodput = tally.slo_met / wall_s if wall_s > 0 else None
        share = tally.slo_met / counted
    by_reason = {o: n for o, n in sorted(tally.outcomes.items()) if o not in ("ok", "cancelled")}
    return PointDone(
        point_index=index,
        concurrency=s.concurrency if s.request_rate is None else None,
        request_rate=s.request_rate,
        max_concurrency=s.max_concurrency if s.request_rate is not None else None,
        sent_request_rate=sent,
        offered_request_rate=_rate(tally.due_spans) if open_loop else None,
        served_request_rate=served,
        runs=len(tally.run_walls_s),
        requests=counted,
        errors=counted - good,
        errors_by_reason=by_reason,
        first_error=next(iter(tally.first_errors.values()), None),
        refused_share=tally.outcomes["refused"] / counted if counted else None,
        duration_s=wall_s,
        output_tok_s=tally.tokens / wall_s if good and wall_s > 0 else None,
        output_tok_s_runs=list(tally.run_output_tok_s),
        decode_tok_s_runs=list(tally.run_decode_tok_s),
        request_throughput_req_s=good / wall_s if wall_s > 0 else None,
        decode_tok_s=tally.decode_sum_tok_s / tally.decode_n if tally.decode_n else None,
        goodput_req_s=goodput,
        goodput_share=share,
        spec_accept_histogram=tally.spec.accepted,
        spec_cap_histogram=tally.spec.caps,
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
        out.pop("sent_request_rate")
        out.pop("offered_request_rate")
        out.pop("max_concurrency")
    else:
        out.pop("concurrency")
    if ev.search:
        out["search_probe"] = True
    out |= acceptance.figures(ev.spec_accept_histogram, ev.spec_cap_histogram)
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
