"""Latest-value store: the dashboard's model, fed event by event, painted from later.

Applying an event is cheap (a few dict/deque writes) and bumps the version of every
panel it touches; the screen repaints only panels whose version moved. Every time shown
derives from event ``t_s``, never from the wall clock, so replays and snapshots are exact.
Textual-free on purpose.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, deque
from dataclasses import dataclass, field

from tuiapp.common import acceptance
from tuiapp.common.numfmt import num
from tuiapp.events import (
    Alert,
    BenchState,
    BenchSummary,
    GpuSample,
    HostSample,
    LogLine,
    Note,
    PointDone,
    ReplaySeek,
    RequestDone,
    RunDone,
    ServerInfo,
    ServerState,
    ServerStats,
    TrialJob,
    TrialResult,
    TrialState,
    _Event,
)
from tuiapp.tui.figures import LatencyWindow, Progress, failure_reason, is_failed, point_note

PANELS = ("header", "throughput", "acceptance", "latency", "gpus", "alerts", "trials", "log", "notes",
          "server", "progress", "curve", "spec_positions")
HISTORY = 240  # points kept per series: enough for a 200-column sparkline
GPU_HISTORY = 60
LOG_LINES = 5000
GAUGE_BUCKET_S = 10.0  # one chart column per this much event time (GaugeSeries)
_SERIES = itertools.count()
_ENDED = ("failed", "stopped")
_LIVE_PHASES = ("preflight", "launching", "warming_up", "running", "stopping")



class GaugeSeries(deque):
    """A chart series of a figure read every second or more often (the server's tok/s, running
    requests, KV usage, requests' TTFT and TPOT): one point per GAUGE_BUCKET_S of event time,
    the mean of its readings.
    Its chart then shifts every 10 s instead of on every poll (a shift redraws every row of a
    tall chart: at 160x48 that doubled the bytes sent to the terminal), and shows 10x the time."""

    def __init__(self) -> None:
        super().__init__((), HISTORY)
        # (this series, its changes): a chart of it is drawn again only when it moved
        self.version = (next(_SERIES), 0)
        self._bucket: int | None = None
        self._sum = 0.0
        self._n = 0

    def add(self, t_s: float, value: float | None) -> None:
        bucket = int(t_s // GAUGE_BUCKET_S)
        if bucket != self._bucket or not self:
            self._bucket, self._sum, self._n = bucket, 0.0, 0
            self.append(None)
            self._moved()
        if value is not None:
            self._sum += value
            self._n += 1
            mean = self._sum / self._n
            if mean != self[-1]:
                self[-1] = mean
                self._moved()

    def _moved(self) -> None:
        self.version = (self.version[0], self.version[1] + 1)

    def gap(self) -> None:
        """A break in the line (a new trial): the next reading starts a new point."""
        self._moved()
        self.append(None)
        self._bucket = None


@dataclass
class TrialRow:
    """One ledger line: the latest phase and, once finished, the ledger row."""

    name: str
    index: int = 0
    total: int = 0
    phase: str = ""
    message: str = ""
    result: TrialResult | None = None
    alert_keys: list[tuple] = field(default_factory=list)


class DashboardStore:
    def __init__(self) -> None:
        self.versions: dict[str, int] = dict.fromkeys(PANELS, 0)
        self.applied = 0
        self.first_t_s: float | None = None
        self.now_t_s: float | None = None
        # header
        self.server_state: ServerState | None = None
        self.server_start_t_s: float | None = None
        self.server_end_t_s: float | None = None
        self.server_info: ServerInfo | None = None
        self.bench_state: BenchState | None = None
        # perf
        self.request_tok_s: deque[float | None] = deque(maxlen=HISTORY)
        self.run_tok_s = GaugeSeries()  # at concurrency 1 a run every few seconds: charted per GAUGE_BUCKET_S too
        self.last_run_tok_s: float | None = None  # kept across trials, as last_run_trial
        self.server_tok_s = GaugeSeries()
        self.server_tok_s_now: float | None = None  # the latest reading (the chart shows GAUGE_BUCKET_S means)
        self.accept_length: deque[float | None] = deque(maxlen=HISTORY)
        self.accept_rate: deque[float | None] = deque(maxlen=HISTORY)
        # charted per GAUGE_BUCKET_S of event time too (their mean): a request a second at high load
        # would otherwise redraw the whole chart every frame
        self.ttft_s = GaugeSeries()
        self.tpot_s = GaugeSeries()
        self.last_request: RequestDone | None = None
        self.last_run: RunDone | None = None
        self.last_run_trial: str | None = None  # kept across trials (last_run is not)
        self.trial_runs: list[RunDone] = []  # runs of the current trial, for mean/sd
        self.summary: BenchSummary | None = None
        # load curves (a sweep, open loop or a search): finished points, and the load running now
        self.points: list[PointDone] = []
        self.current_load: str | None = None
        # a sweep or search was seen (a load-point note, or a second load point of a trial):
        # the load-curve layout from then on. A closed-loop trial's one PointDone is no curve.
        self.curve_seen = False
        self.requests_failed = 0
        # what a tuner looks at first: the server's queue and KV cache now, this trial's
        # latency percentiles, request rate and errors by reason (a new trial or point starts empty)
        self.server_load: ServerStats | None = None  # the latest with running/queued/KV figures
        self.running_reqs = GaugeSeries()
        self.queue_reqs = GaugeSeries()
        self.kv_usage = GaugeSeries()
        self.metrics_seen = False  # /metrics answered with scheduler gauges
        self.metrics_absent: str | None = None  # why /metrics gives nothing (a Note said so)
        self.latency = LatencyWindow()
        self.request_times_s: deque[float] = deque(maxlen=4096)
        self.trial_requests = 0  # requests finished in the current trial (0: server figures are stale)
        self.errors_by_reason: Counter[str] = Counter()
        self.trial_started_t_s: dict[str, float] = {}
        self.trial_ended_t_s: dict[str, float] = {}
        self.sweep_point: tuple[int, int | None, str, int] | None = None  # from the loop's note
        self.sweep_started_t_s: float | None = None
        self.point_started_t_s: float | None = None
        self.point_runs = 0  # runs finished at the current point
        self.server_has_acceptance = False
        # Whether the latest server speculates; kept across trials so the acceptance panel
        # does not fold and unfold between one trial's end and the next one's ServerInfo.
        self.speculating: bool | None = None
        # the current trial's per-request acceptance histograms, pooled (spec_positions panel)
        self.spec_tally = acceptance.Tally()
        self.spec_requests_without_histogram = 0
        # gpus
        self.gpus: dict[int, GpuSample] = {}
        self.host: HostSample | None = None
        self.gpu_rx: dict[int, deque[float | None]] = {}
        self.gpu_tx: dict[int, deque[float | None]] = {}
        # alerts, newest first; same key = same incident (its rank list grows)
        self.alerts: dict[tuple, Alert] = {}
        self._alert_keys: dict[tuple[str, int], tuple] = {}  # (source, alert_id) -> key in alerts
        self.alert_order: list[tuple] = []
        # trials
        self.trials: dict[str, TrialRow] = {}
        self.trial_jobs: dict[str, TrialJob] = {}  # trials --slurm: each trial's job (the campaign view)
        self.current_trial: str | None = None
        # log and notes
        self.log: deque[LogLine] = deque(maxlen=LOG_LINES)
        self.log_errors = 0
        self.log_total = 0
        self.notes: deque[Note] = deque(maxlen=50)

    # ------------------------------------------------------------------ helpers

    def _bump(self, *panels: str) -> None:
        for panel in panels:
            self.versions[panel] += 1

    def rel_s(self, t_s: float) -> float:
        """Seconds since the first event (log, alert and timeline times)."""
        return t_s - (self.first_t_s if self.first_t_s is not None else t_s)

    @property
    def uptime_s(self) -> float | None:
        if self.server_start_t_s is None or self.now_t_s is None:
            return None
        end = self.server_end_t_s if self.server_end_t_s is not None else self.now_t_s
        return end - self.server_start_t_s

    @property
    def alerts_newest_first(self) -> list[Alert]:
        return [self.alerts[key] for key in reversed(self.alert_order)]

    def run_stats(self) -> tuple[float | None, float | None, tuple[float, float] | None, int]:
        """(mean, sd, ci95, n) of decode tok/s over the current trial's runs (in a sweep, those
        at the current load: the summary pools loads, so it is not used there)."""
        if self.summary is not None and self.summary.trial == self._trial_of_runs() and not self.points:
            s = self.summary
            return s.mean_decode_tok_s, s.sd_decode_tok_s, s.ci95_decode_tok_s, s.runs
        values = [r.decode_tok_s for r in self.trial_runs if r.decode_tok_s is not None]
        if not values:
            return None, None, None, 0
        sd = statistics.stdev(values) if len(values) > 1 else None
        return statistics.fmean(values), sd, None, len(values)

    @property
    def finished(self) -> bool:
        """Every trial of the plan has its ledger row (the campaign, or a one-trial launch, is over)."""
        if not self.trials:  # attach: no plan; done when the benchmark loop did its --runs
            return self.bench_state is not None and self.bench_state.state == "done"
        total = max(row.total for row in self.trials.values())
        rows = self.trials.values()
        # a stopped or resumed trial ends "skipped", without a ledger row of this run
        return (len(self.trials) >= max(total, 1) and any(row.result is not None for row in rows)
                and all(row.phase not in _LIVE_PHASES and (row.result is not None or row.phase == "skipped")
                        for row in rows))

    @property
    def mode(self) -> str:
        """The layout this session wants: "curve" (a sweep or search: several load points), "campaign"
        (a plan of several trials) or "single" (attach, launch: one server)."""
        if self.curve_seen:
            return "curve"
        if self.trials and max(row.total for row in self.trials.values()) > 1:
            return "campaign"
        return "single"

    def failure(self) -> str | None:
        """Why the server or the current trial failed to start, for the main screen."""
        state = self.server_state
        if state is not None and state.state == "failed":
            return state.message or (f"exit code {state.exit_code}" if state.exit_code is not None else "failed")
        row = self.trials.get(self.current_trial) if self.current_trial else None
        if row is not None and row.phase == "failed":
            reason = row.message or (row.result.row.get("error") if row.result else None)
            return reason or (row.result.status if row.result else "failed")
        return None

    def progress(self) -> Progress | None:
        """The plan's trials and the sweep's or search's points, with an ETA from the pace so far."""
        parts: list[str] = []
        fraction: float | None = None
        eta_s: float | None = None
        start_s: float | None = None
        now = self.now_t_s
        row = self.trials.get(self.current_trial) if self.current_trial else None
        if row is not None and row.total > 1:
            parts.append(f"trial {row.index + 1}/{row.total}")
            done = [self.trial_ended_t_s[n] - self.trial_started_t_s[n] for n in self.trial_ended_t_s
                    if n in self.trial_started_t_s]
            fraction = len(self.trial_ended_t_s) / row.total
            start_s = min(self.trial_started_t_s.values(), default=None)
            if done and now is not None:
                per_trial = sum(done) / len(done)
                running = 0.0 if self.current_trial in self.trial_ended_t_s else now - self.trial_started_t_s.get(
                    self.current_trial, now)
                left = row.total - len(self.trial_ended_t_s)
                eta_s = max(0.0, per_trial * left - min(running, per_trial))
        if self.sweep_point is not None:
            index, total, load, runs = self.sweep_point
            where = f"point {index}/{total}" if total else f"probe {index}"
            parts.append(f"{where} ({load}) run {min(self.point_runs + 1, runs)}/{runs}")
            if start_s is None:
                start_s = self.sweep_started_t_s
            if total and len(parts) == 1 and now is not None and self.sweep_started_t_s is not None:
                runs_done = (index - 1) * runs + self.point_runs
                fraction = runs_done / (total * runs)
                if runs_done:
                    eta_s = (now - self.sweep_started_t_s) / runs_done * (total * runs - runs_done)
        if not parts:
            return None
        elapsed = now - start_s if now is not None and start_s is not None else None
        return Progress(" · ".join(parts), fraction, elapsed, eta_s)

    def outcome(self, width: int | None = None) -> str | None:
        """The finished campaign in one line: counts, and the fastest trial that worked with
        its difference against its own base, as the ledger computed it. Given ``width``, the
        longest wording that fits (the base's name goes first, then the tok/s)."""
        if not self.finished:
            return None
        if not self.trials and self.points:  # a sweep: its loads, not one load's runs
            best = max((p for p in self.points if p.output_tok_s is not None), key=lambda p: p.output_tok_s,
                       default=None)
            text = f"sweep done: {len(self.points)} load point{'s' if len(self.points) != 1 else ''}"
            if best is not None:
                load = f"{best.request_rate:g} req/s" if best.request_rate is not None else f"concurrency {best.concurrency}"
                text += f", most output {best.output_tok_s:.1f} tok/s aggregate at {load}"
            return text if width is None or len(text) <= width else text.split(", most")[0]
        if not self.trials:
            mean, sd, ci95, n = self.run_stats()
            text = f"benchmark done: {n} run{'s' if n != 1 else ''}"
            if mean is not None:
                text += f", {mean:.1f} ± {num(sd)} tok/s" + (f" (95% CI {ci95[0]:.1f}–{ci95[1]:.1f})" if ci95 else "")
            return text if width is None or len(text) <= width else text.split(" (95% CI")[0]
        rows = [row.result for row in self.trials.values() if row.result is not None]
        ok = [r for r in rows if r.status == "ok"]
        failed = len(rows) - len(ok)
        dead = sum(1 for r in rows if r.row.get("dead_end"))
        parts = [f"{len(ok)} ok"] + ([f"{failed} failed"] if failed else [])
        parts.append(f"{dead} dead end{'s' if dead != 1 else ''}")
        head = f"{'campaign' if len(rows) > 1 else 'trial'} done: {', '.join(parts)}"
        best = self.best_result()
        if best is None:
            return head
        tok_s = f" {best.row['mean_decode_tok_s']:.1f} tok/s"
        delta, base = best.row.get("delta_pct"), best.row.get("baseline")
        change = f" {delta:+.1f}%" if delta is not None and base else ""
        vs = f" vs {base}" if change else " (the baseline: nothing beat it)" if len(rows) > 1 else ""
        wordings = [f"{head}; best {best.name}{tok_s}{change}{vs}", f"{head}; best {best.name}{tok_s}{change}",
                    f"{head}; best {best.name}{change}"]
        return next((w for w in wordings if width is None or len(w) <= width), wordings[-1])

    def best_result(self) -> TrialResult | None:
        """The fastest trial that worked (the ledger's figures), if any has figures."""
        measured = [row.result for row in self.trials.values() if row.result is not None
                    and row.result.status == "ok" and row.result.row.get("mean_decode_tok_s") is not None]
        return max(measured, key=lambda r: r.row["mean_decode_tok_s"], default=None)

    def _trial_of_runs(self) -> str | None:
        return self.trial_runs[-1].trial if self.trial_runs else self.current_trial

    # ------------------------------------------------------------------ apply

    def apply(self, event: _Event) -> None:
        self.applied += 1
        t_s = event.t_s
        if self.first_t_s is None:
            self.first_t_s = t_s
        if self.now_t_s is None or t_s > self.now_t_s:
            if self.now_t_s is None or int(t_s) != int(self.now_t_s):
                self.versions["header"] += 1  # the uptime shown moved a second
            self.now_t_s = t_s
        kind = type(event)
        handler = _HANDLERS.get(kind)
        if handler is None:  # once per event type, not a name lookup per event
            handler = _HANDLERS[kind] = getattr(DashboardStore, f"_on_{kind.__name__}", _ignore)
        handler(self, event)

    def _on_ReplaySeek(self, ev: ReplaySeek) -> None:
        # The replay jumped: forget everything; the state at the new position follows.
        versions, applied, first_t_s = self.versions, self.applied, self.first_t_s
        curve_seen = self.curve_seen
        self.__init__()
        self.versions = {panel: v + 1 for panel, v in versions.items()}
        self.curve_seen = curve_seen  # the layout never goes back from load curves
        self.applied, self.first_t_s, self.now_t_s = applied, first_t_s, ev.t_s

    def _on_ServerState(self, ev: ServerState) -> None:
        self._bump("throughput", "server")  # a failure's reason shows in the main panel
        if self.server_start_t_s is None or ev.state == "starting":
            self.server_start_t_s = ev.t_s
            self.server_end_t_s = None
        if ev.state in _ENDED:
            self.server_end_t_s = ev.t_s
        self.server_state = ev
        self._bump("header")

    def _on_ServerInfo(self, ev: ServerInfo) -> None:
        self.server_info = ev
        self.speculating = bool(ev.speculative_algorithm) or self.server_has_acceptance
        self._bump("header", "acceptance", "spec_positions")  # "speculation off" depends on it

    def _on_BenchState(self, ev: BenchState) -> None:
        self.bench_state = ev
        self._bump("header", "gpus", "throughput")  # "done" may end an attach session

    def _on_ServerStats(self, ev: ServerStats) -> None:
        if ev.running_reqs is not None or ev.queue_reqs is not None or ev.token_usage is not None:
            self.server_load = ev
            self.running_reqs.add(ev.t_s, ev.running_reqs)
            self.queue_reqs.add(ev.t_s, ev.queue_reqs)
            self.kv_usage.add(ev.t_s, ev.token_usage)
            if ev.source == "metrics":
                self.metrics_seen = True
            self._bump("server")
        if ev.gen_throughput_tok_s is not None:
            # SGLang's gauge (and /server_info's last_gen_throughput) keeps its last value while
            # idle, from an earlier session or trial: shown only once this trial's requests came
            # back, and as a gap while nothing runs
            idle = ev.running_reqs == 0
            self.server_tok_s_now = None if idle or not self.trial_requests else ev.gen_throughput_tok_s
            self.server_tok_s.add(ev.t_s, self.server_tok_s_now)
            self._bump("throughput")
        if ev.accept_length is not None:
            self.server_has_acceptance = True
            self.speculating = True
            self.accept_length.append(ev.accept_length)
            self._bump("acceptance", "spec_positions")
        if ev.accept_rate is not None:
            self.accept_rate.append(ev.accept_rate)
            self._bump("acceptance")

    def _on_RequestDone(self, ev: RequestDone) -> None:
        if ev.cancelled:
            return  # cut off by our own stop: neither a result nor a failure
        self.last_request = ev
        self.trial_requests += 1
        self.request_times_s.append(ev.t_s)
        if is_failed(ev):
            self.requests_failed += 1
            self.errors_by_reason[failure_reason(ev)] += 1
        else:
            self.latency.add(ev)
        self._bump("server")
        self.request_tok_s.append(ev.decode_tok_s)
        if ev.ttft_s is not None:
            self.ttft_s.add(ev.t_s, ev.ttft_s)
        if ev.tpot_s is not None:
            self.tpot_s.add(ev.t_s, ev.tpot_s)
        if self.spec_tally.add(ev.spec_accept_histogram, ev.spec_cap_histogram):
            self._bump("spec_positions")
        elif ev.spec_verify_ct:
            self.spec_requests_without_histogram += 1
            self._bump("spec_positions")
        # The server's own acceptance figures win; a client-side one fills in without them.
        if not self.server_has_acceptance and (ev.accept_length is not None or ev.accept_rate is not None):
            if ev.accept_length is not None:
                self.accept_length.append(ev.accept_length)
            if ev.accept_rate is not None:
                self.accept_rate.append(ev.accept_rate)
            self._bump("acceptance")
        self._bump("throughput", "latency")

    def _on_RunDone(self, ev: RunDone) -> None:
        # mean and sd are of one trial's runs at one load (a sweep's loads are not one sample)
        if self.trial_runs and (self.trial_runs[-1].trial, self.trial_runs[-1].point_index) != (ev.trial, ev.point_index):
            self.trial_runs = []
        self.trial_runs.append(ev)
        self.last_run = ev
        self.last_run_trial = ev.trial
        self.run_tok_s.add(ev.t_s, ev.decode_tok_s)
        self.last_run_tok_s = ev.decode_tok_s
        self.point_runs += 1
        self.curve_seen = self.curve_seen or ev.point_index > 0
        self._bump("progress")
        if ev.request_rate is not None or ev.point_index or self.points:
            self.current_load = (f"{ev.request_rate:g} req/s" if ev.request_rate is not None
                                 else f"concurrency {ev.concurrency}")
            self._bump("latency", "curve")
        self._bump("throughput", "trials")  # the ledger shows the running trial's live mean

    def _on_PointDone(self, ev: PointDone) -> None:
        self.points.append(ev)
        self.curve_seen = self.curve_seen or ev.point_index > 0
        self.latency.clear()  # the next point's percentiles start empty
        self._bump("latency", "throughput", "curve", "progress")

    def _on_BenchSummary(self, ev: BenchSummary) -> None:
        self.summary = ev
        self._bump("throughput", "trials")

    def _on_GpuSample(self, ev: GpuSample) -> None:
        self.gpus[ev.index] = ev
        self.gpu_rx.setdefault(ev.index, deque(maxlen=GPU_HISTORY)).append(ev.pcie_rx_bytes_s)
        self.gpu_tx.setdefault(ev.index, deque(maxlen=GPU_HISTORY)).append(ev.pcie_tx_bytes_s)
        self._bump("gpus")

    def _on_HostSample(self, ev: HostSample) -> None:
        self.host = ev
        self._bump("gpus")

    def _on_Alert(self, ev: Alert) -> None:
        # alert_id 0 is unset (NVML's Xid and lost-GPU alerts): each is an incident of its own
        key = (ev.source, ev.alert_kind, ev.alert_id or -len(self.alert_order) - 1)
        earlier = self.alerts.get(key)
        if earlier is not None:
            ranks = sorted(set(earlier.ranks) | set(ev.ranks))
            ev = ev.model_copy(update={"ranks": ranks})
        else:
            self.alert_order.append(key)
            if self.current_trial is not None:
                self.trials[self.current_trial].alert_keys.append(key)
        self.alerts[key] = ev
        if ev.alert_id:
            self._alert_keys[(ev.source, ev.alert_id)] = key
        self._bump("alerts", "trials")

    def alert_by_id(self, source: str, alert_id: int) -> Alert | None:
        """The alert a death names as its cause (``Alert.caused_by``)."""
        key = self._alert_keys.get((source, alert_id))
        return self.alerts.get(key) if key is not None else None

    def _on_TrialJob(self, ev: TrialJob) -> None:
        self.trial_jobs[ev.trial] = ev
        self._bump("trials")

    def _on_TrialState(self, ev: TrialState) -> None:
        if ev.name != self.current_trial:
            # A new trial: its "now" figures start empty (a gap in every series), so the
            # previous trial's acceptance is never read as this one's.
            for series in (self.request_tok_s, self.accept_length, self.accept_rate):
                series.append(None)
            for gauge in (self.server_tok_s, self.running_reqs, self.queue_reqs, self.kv_usage, self.ttft_s, self.tpot_s):
                gauge.gap()
            self.server_tok_s_now = None
            self.server_has_acceptance = False
            self.spec_tally = acceptance.Tally()
            self.spec_requests_without_histogram = 0
            self.last_request, self.last_run, self.trial_runs = None, None, []
            self.server_info = None  # this trial's server says its own version and spec config
            self.latency.clear()
            self.request_times_s.clear()
            self.errors_by_reason.clear()
            self.trial_requests = 0
            self.server_load = None
            self.sweep_point = None
            self.sweep_started_t_s = None
            self.trial_started_t_s.setdefault(ev.name, ev.t_s)
            self._bump("throughput", "acceptance", "latency", "header", "server", "progress", "spec_positions")
        row = self.trials.setdefault(ev.name, TrialRow(ev.name))
        row.index, row.total, row.phase, row.message = ev.index, ev.total, ev.phase, ev.message
        self.current_trial = ev.name
        if ev.phase in ("done", "failed", "skipped"):
            self.trial_ended_t_s.setdefault(ev.name, ev.t_s)
        self._bump("trials", "header", "progress", "throughput")

    def _on_TrialResult(self, ev: TrialResult) -> None:
        row = self.trials.setdefault(ev.name, TrialRow(ev.name))
        row.result = ev
        self._bump("trials", "header", "throughput", "gpus")  # the last row ends the campaign: its outcome shows

    def _on_LogLine(self, ev: LogLine) -> None:
        self.log.append(ev)
        self.log_total += 1
        if ev.level == "error":
            self.log_errors += 1
        self._bump("log")

    def _on_Note(self, ev: Note) -> None:
        self.notes.append(ev)
        point = point_note(ev.text)
        if point is not None:
            self.sweep_point = point
            self.curve_seen = self.curve_seen or point[1] is None or point[1] > 1  # a search, or a sweep
            self.point_runs = 0
            self.point_started_t_s = ev.t_s
            if point[0] == 1 or self.sweep_started_t_s is None:
                self.sweep_started_t_s = ev.t_s
            self._bump("progress", "curve")
        elif ev.source == "metrics" and "/metrics" in ev.text:
            self.metrics_absent = ev.text
            self._bump("server")
        self._bump("notes")


def _ignore(store: DashboardStore, event: _Event) -> None:
    """Events the dashboard does not show."""


_HANDLERS: dict[type, object] = {}
