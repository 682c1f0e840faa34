"""What one trial's events add up to: its first failure, runs, acceptance, GPU figures.

The runner hands every event of the trial through :meth:`TrialCollector.observe` on its way
to the bus (from the event loop and from the GPU sampler's thread; only appends and dict
stores, which the GIL makes safe).
"""

from __future__ import annotations

import time
from collections import Counter

from tuiapp.common.startup_phases import Latest
from tuiapp.events import (
    Alert,
    BenchSummary,
    GpuSample,
    OutputCheck,
    PointDone,
    RunDone,
    RunFigures,
    ServerStats,
    _Event,
)

# Generic kinds say *that* it died; the specific ones say why, so they name the status.
_GENERIC = {"error", "crash"}


class TrialCollector:
    def __init__(self) -> None:
        self.bench_started_s: float | None = None
        self._sample_t_s: dict[int, float] = {}  # GPU -> its latest sample's time
        # alert_id -> latest update (more ranks joined); id 0 (unset: NVML's Xid and lost-GPU
        # alerts) gets a fresh negative key, since each such alert is an incident of its own
        self.alerts: dict[int, Alert] = {}
        self._order: list[int] = []
        # set by stopped(): what a server prints after we stopped it is never the trial's verdict
        self.stop_line: int | None = None
        self.stop_seen: int | None = None
        self.runs: list[RunFigures] = []
        self.points: list[PointDone] = []  # load points of a sweep or an open-loop trial
        self.summary: BenchSummary | None = None
        self.server_accept_length: float | None = None
        self.startup = Latest()  # the server's own start-up breakdown
        self.peak_mem_bytes: dict[int, int] = {}
        # GPU -> [sum, count, peak] of tx+rx while benchmarking: a running aggregate, not the
        # samples, so a trial that benchmarks for hours holds constant memory
        self.pcie_bench: dict[int, list[float]] = {}
        self._benchmarking = False
        self.request_errors: list[str] = []  # the first few failed requests' reasons
        self.requests = 0  # benchmark requests that counted (cancelled ones aside)
        self.failed_by_reason: Counter = Counter()  # outcome -> failed requests
        self.output_tokens = 0
        self.numerical_faults = 0
        self.output_digests: dict[str, str] = {}  # bench check_output: prompt index -> digest

    @property
    def benchmarking(self) -> bool:
        return self._benchmarking

    @benchmarking.setter
    def benchmarking(self, on: bool) -> None:
        self._benchmarking = on
        if on:
            self.bench_started_s = time.time()

    def observe(self, event: _Event) -> None:
        if isinstance(event, Alert):
            if event.severity == "error":
                key = event.alert_id or -len(self._order) - 1
                if key not in self.alerts:
                    self._order.append(key)
                self.alerts[key] = event
        elif isinstance(event, RunDone):
            self.runs.append(RunFigures(event))
        elif isinstance(event, OutputCheck):
            self.output_digests = dict(event.digests)
        elif isinstance(event, PointDone):
            self.points.append(event)
        elif isinstance(event, BenchSummary):
            self.summary = event
        elif isinstance(event, ServerStats):
            self.startup.observe(event)
            if event.accept_length is not None:
                self.server_accept_length = event.accept_length
        elif isinstance(event, GpuSample):
            if event.mem_used_bytes:  # 0 is a GPU we never saw in use, not a measurement
                prev = self.peak_mem_bytes.get(event.index, 0)
                self.peak_mem_bytes[event.index] = max(prev, event.mem_used_bytes)
            # A sample's rates average the interval since that GPU's previous sample: one whose
            # interval began before the benchmark would mix in start-up traffic (weights loading
            # over PCIe). Judged per sample, whatever the cadence (4 Hz during a simulated
            # start-up, 1 Hz after).
            prev_t_s = self._sample_t_s.get(event.index)
            self._sample_t_s[event.index] = event.t_s
            settled = (self.bench_started_s is not None and prev_t_s is not None
                       and prev_t_s >= self.bench_started_s)
            if (self.benchmarking and settled and event.pcie_tx_bytes_s is not None
                    and event.pcie_rx_bytes_s is not None):
                value = event.pcie_tx_bytes_s + event.pcie_rx_bytes_s
                agg = self.pcie_bench.setdefault(event.index, [0.0, 0, value])
                agg[0] += value
                agg[1] += 1
                agg[2] = max(agg[2], value)
        elif getattr(event, "kind", None) == "request" and not getattr(event, "cancelled", False):
            # cut off by our own stop: no request of the measurement
            self.requests += 1
            if getattr(event, "numerical_fault", False):
                self.numerical_faults += 1
            if getattr(event, "ok", True):
                self.output_tokens += getattr(event, "completion_tokens", None) or 0
                return
            self.failed_by_reason[getattr(event, "outcome", None) or "failed"] += 1
            if len(self.request_errors) < 8:
                self.request_errors.append(getattr(event, "error", None) or getattr(event, "outcome", None)
                                           or "request failed")

    def stopped(self, log_lines: int | None = None) -> None:
        """We stop a server that is still running (a ready or run timeout, a job we cancel). What
        it prints after (a traceback of an import our SIGINT cut, a child's end under scancel's
        SIGTERM) is our stop's doing: it stays in the row's alerts but never decides its status.
        Where one log says where we stopped (``log_lines``, its line count then: a failure printed
        before it but classified at the final flush still decides) that is the bound; the logs of
        a job's nodes have no one numbering, and there the alerts seen by then are."""
        self.stop_line = log_lines
        self.stop_seen = len(self._order)

    @property
    def we_stopped(self) -> bool:
        """We stopped the server while it ran (stopped()): its exit, whatever the code, is ours."""
        return self.stop_seen is not None

    def first_alert(self) -> Alert | None:
        """The root cause: the earliest specific alert in the log, else the earliest alert."""
        alerts = [(self.alerts[key], seen) for seen, key in enumerate(self._order)]
        if self.stop_line is not None:
            alerts = [(a, seen) for a, seen in alerts if a.first_line is None or a.first_line <= self.stop_line]
        elif self.stop_seen is not None:
            alerts = alerts[:self.stop_seen]
        if not alerts:
            return None

        def position(item: tuple[Alert, int]) -> tuple[float, int]:
            alert, seen = item
            return (alert.first_line if alert.first_line is not None else float("inf"), seen)

        specific = [item for item in alerts if item[0].alert_kind not in _GENERIC]
        return min(specific or alerts, key=position)[0]

    def run_tok_s(self) -> list[float]:
        return [r.decode_tok_s for r in self.runs if r.decode_tok_s is not None and r.errors < r.requests]

    def run_output_tok_s(self) -> list[float]:
        return [r.output_tok_s for r in self.runs if r.output_tok_s is not None and r.errors < r.requests]

    def accept_length(self) -> float | None:
        values = [r.accept_length for r in self.runs if r.accept_length is not None]
        if values:
            return sum(values) / len(values)
        if self.summary is not None and self.summary.accept_length is not None:
            return self.summary.accept_length
        return self.server_accept_length

    def accept_runs(self) -> list[tuple[list[int] | None, list[int] | None]]:
        """Each run's pooled acceptance histogram and its caps (tuiapp.common.acceptance)."""
        return [(r.spec_accept_histogram, r.spec_cap_histogram) for r in self.runs if r.spec_accept_histogram]

    def mean_output_tok_s(self) -> float | None:
        values = [r.output_tok_s for r in self.runs if r.output_tok_s is not None]
        return sum(values) / len(values) if values else None

    def mean_ttft_s(self) -> float | None:
        values = [r.ttft_s for r in self.runs if r.ttft_s is not None]
        return sum(values) / len(values) if values else None

    def pcie_avg_peak(self) -> tuple[float | None, float | None]:
        series = [agg for agg in self.pcie_bench.values() if agg[1]]
        if not series:
            return None, None
        avg = sum(total / count for total, count, _ in series) / len(series)
        peak = max(peak for _, _, peak in series)
        return avg, peak
