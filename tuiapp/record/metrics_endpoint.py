"""The Prometheus endpoint sink: the live session's figures as ``tuiapp_*`` series.

A sink like the recorder: it reads the bus and keeps prometheus_client metrics in a registry of
its own (never the process-global one), served by prometheus_client's own HTTP server on a
daemon thread (``/metrics``, the Prometheus text format, or OpenMetrics when the scraper asks
for it). Names follow Prometheus's conventions: the ``tuiapp_`` prefix, base units in the name
(``_seconds``, ``_bytes``, ``_ratio``), ``_total`` on counters. Only imported when
``--metrics-port`` is given, so it costs nothing when off.

What each series means is in docs/prometheus-grafana.md; tests/test_metrics_endpoint.py holds
the values to the events.
"""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)

from tuiapp.common import acceptance, startup_phases
from tuiapp.events import (
    Alert,
    BenchSummary,
    GpuSample,
    Note,
    PointDone,
    RequestDone,
    RunDone,
    ServerInfo,
    ServerState,
    ServerStats,
    TrialResult,
    TrialState,
)

# Client-side latencies: 5 ms (a TTFT on a hot prefix) to 2 min (a long prompt under load).
_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0,
                      7.5, 10.0, 20.0, 30.0, 60.0, 120.0)
# Per-token gaps: 1 ms to 1 s.
_TOKEN_BUCKETS_S = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
                    0.075, 0.1, 0.15, 0.25, 0.5, 1.0)
_LIVE_PHASES = {"preflight", "launching", "warming_up", "running", "stopping"}
_NO_TRIAL = ""  # attach: there is no trial; the label stays, empty
_MESSAGE_CHARS = 120


def error_reason(text: str | None) -> str:
    """A request error as a label of bounded cardinality: its first clause, numbers as N."""
    if not text:
        return "unknown"
    head = re.split(r"[:(\n]", text.strip(), maxsplit=1)[0].strip() or text.strip()
    return re.sub(r"\d+", "N", head)[:60]


class MetricsEndpoint:
    """``MetricsEndpoint(host, port)`` binds at once (a port in use raises OSError before the
    session starts); ``run(sub)`` applies a bus subscription's events; ``close()`` stops serving."""

    def __init__(self, host: str, port: int) -> None:
        # `_created` series (one per counter and histogram child) say nothing a dashboard reads here
        disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=True)
        self._define()
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.host, self.port = host, self._server.server_port
        self._trial = _NO_TRIAL
        self._phase: dict[str, str] = {}  # trial -> its last phase
        self._incidents: dict[int, tuple[str, ...]] = {}  # alert_id -> its info labels
        self._spec: dict[str, acceptance.Tally] = {}  # trial -> its runs' histograms pooled

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def _define(self) -> None:
        r = self.registry
        t = ["trial"]
        self.requests = Counter("tuiapp_requests", "Benchmark requests finished, by outcome (ok, error, cancelled)",
                                [*t, "outcome"], registry=r)
        self.request_errors = Counter("tuiapp_request_errors", "Failed benchmark requests, by reason (refused, http_error, timeout, ...)",
                                      [*t, "reason"], registry=r)
        self.output_tokens = Counter("tuiapp_output_tokens", "Completion tokens received by the benchmark", t,
                                     registry=r)
        self.ttft = Histogram("tuiapp_ttft_seconds", "Time to first token, client side", t,
                              buckets=_LATENCY_BUCKETS_S, registry=r)
        self.tpot = Histogram("tuiapp_tpot_seconds",
                              "Time per output token after the first: (e2e - ttft) / (tokens - 1), per request", t,
                              buckets=_TOKEN_BUCKETS_S, registry=r)
        self.itl = Histogram("tuiapp_itl_seconds",
                             "Mean gap between streamed chunks of a request (several tokens a chunk with speculation)",
                             t, buckets=_TOKEN_BUCKETS_S, registry=r)
        self.e2e = Histogram("tuiapp_e2e_latency_seconds", "End-to-end request latency, client side", t,
                             buckets=_LATENCY_BUCKETS_S, registry=r)
        self.runs = Counter("tuiapp_runs", "Benchmark runs finished", t, registry=r)
        self.decode = Gauge("tuiapp_decode_tokens_per_second",
                            "Last run: mean single-stream decode rate of its requests", t, registry=r)
        self.output = Gauge("tuiapp_output_tokens_per_second",
                            "Last run: aggregate output rate (completion tokens / run wall time)", t, registry=r)
        self.accept = Gauge("tuiapp_spec_accept_length",
                            "Last run: speculative decoding's mean accepted length (tokens per verify step)", t,
                            registry=r)
        self.concurrency = Gauge("tuiapp_bench_concurrency", "Last run: concurrent requests", t, registry=r)
        # acceptance per draft position (tuiapp.common.acceptance): counters, so a query pools
        # any window exactly (increase(accepted) / increase(observed)), and the trial's ratio so far
        tp = [*t, "position"]
        self.spec_pos_accepted = Counter("tuiapp_spec_position_accepted_steps",
                                         "Verify steps that accepted the draft at this position", tp, registry=r)
        self.spec_pos_observed = Counter("tuiapp_spec_position_observed_steps",
                                         "Verify steps whose budget reached this position (beyond it: unobserved, "
                                         "not rejected)", tp, registry=r)
        self.spec_pos_ratio = Gauge("tuiapp_spec_position_acceptance_ratio",
                                    "The trial so far: accepted / observed steps at this draft position", tp,
                                    registry=r)
        self.spec_len_steps = Counter("tuiapp_spec_accept_length_steps",
                                      "Verify steps by accept length (accepted drafts + the bonus token)",
                                      [*t, "length"], registry=r)
        self.decode_mean = Gauge("tuiapp_decode_tokens_per_second_mean",
                                 "Across the trial's runs: mean decode tok/s", t, registry=r)
        self.decode_ci = Gauge("tuiapp_decode_tokens_per_second_ci95",
                               "Across the trial's runs: 95% confidence bound of the mean decode tok/s",
                               [*t, "bound"], registry=r)
        self.incidents = Counter("tuiapp_incidents", "Failures and warnings flagged, counted when first seen",
                                 ["kind", "severity"], registry=r)
        self.incident_ranks = Counter("tuiapp_incident_ranks",
                                      "Ranks that incidents reached: once per incident and rank, as ranks join",
                                      ["kind", "rank"], registry=r)
        self.incident_info = Gauge("tuiapp_incident_info", "One series per incident (1), its ranks as they grew",
                                   ["id", "kind", "severity", "ranks", "message"], registry=r)
        self.notes = Counter("tuiapp_notes", "Notes for the user, by level", ["level"], registry=r)
        self.trial_phase = Gauge("tuiapp_trial_phase_info", "The trial's current phase (1); one series a trial",
                                 ["trial", "phase"], registry=r)
        self.trial_live = Gauge("tuiapp_trial_live", "1 while the trial is being launched or measured, else 0",
                                ["trial"], registry=r)
        self.trial_index = Gauge("tuiapp_trial_index", "Position of the current trial in the plan (1-based)",
                                 registry=r)
        self.trials_planned = Gauge("tuiapp_trials_planned", "Trials in the plan", registry=r)
        self.trial_results = Counter("tuiapp_trial_results", "Trials finished, by status (ok or a failure kind)",
                                     ["status"], registry=r)
        self.server_up = Gauge("tuiapp_server_up", "1 while the server is ready or running", registry=r)
        self.server_info = Gauge("tuiapp_server_info", "The server being measured (1)",
                                 ["url", "model", "engine", "version"], registry=r)
        self.server_gen = Gauge("tuiapp_server_gen_throughput_tokens_per_second",
                                "The server's own generation throughput (its Decode batch log lines)", registry=r)
        # newer SGLang families the poller reads (tuiapp.server.metrics_poll), for decisions on
        # KV size, retraction, DP balance and adaptive speculation
        self.server_kv_free = Gauge("tuiapp_server_kv_available_tokens", "KV cache tokens free, all DP ranks",
                                    registry=r)
        self.server_util = Gauge("tuiapp_server_utilization_ratio", "The server's own busy share, 0 to 1",
                                 registry=r)
        self.server_retractions = Gauge("tuiapp_server_retracted_requests",
                                        "Requests the server retracted (KV full) since it started", registry=r)
        self.server_imbalance = Gauge("tuiapp_server_dp_attention_imbalance_ratio",
                                      "DP attention's token imbalance over the last poll window", registry=r)
        self.server_spec_steps = Gauge("tuiapp_server_spec_steps",
                                       "Speculative steps the server uses now (adaptive budgets move it)", registry=r)
        self.server_startup = Gauge("tuiapp_server_startup_seconds",
                                    "The server's own start-up time by phase (they nest: tokenizer_e2e is the"
                                    " total); after_ready: start-up work done after ready", ["phase"], registry=r)
        self._startup = startup_phases.Latest()
        lp = ["trial", "load"]  # load: "concurrency=16" or "request_rate=4"
        self.point_output = Gauge("tuiapp_point_output_tokens_per_second",
                                  "A load point's aggregate output rate (its runs pooled)", lp, registry=r)
        self.point_requests = Gauge("tuiapp_point_requests_per_second", "A load point's request throughput", lp,
                                    registry=r)
        self.point_latency = Gauge("tuiapp_point_latency_seconds",
                                   "A load point's latency percentiles: ttft, tpot, itl, e2e at p50/p90/p99",
                                   [*lp, "latency", "quantile"], registry=r)
        self.point_goodput = Gauge("tuiapp_point_goodput_requests_per_second",
                                   "A load point's requests/s that met every SLO goal", lp, registry=r)
        self.point_goodput_share = Gauge("tuiapp_point_goodput_ratio",
                                         "A load point's share of requests that met every SLO goal, 0 to 1", lp,
                                         registry=r)
        g = ["gpu", "uuid", "node"]
        self.gpu_mem_used = Gauge("tuiapp_gpu_memory_used_bytes", "GPU memory in use", g, registry=r)
        self.gpu_mem_total = Gauge("tuiapp_gpu_memory_total_bytes", "GPU memory in all", g, registry=r)
        self.gpu_tx = Gauge("tuiapp_gpu_pcie_tx_bytes_per_second", "PCIe bytes/s from the GPU to the host", g,
                            registry=r)
        self.gpu_rx = Gauge("tuiapp_gpu_pcie_rx_bytes_per_second", "PCIe bytes/s from the host to the GPU", g,
                            registry=r)
        self.gpu_util = Gauge("tuiapp_gpu_utilization_ratio", "GPU busy time, 0 to 1", g, registry=r)
        self.gpu_power = Gauge("tuiapp_gpu_power_watts", "GPU power draw", g, registry=r)
        self.gpu_temp = Gauge("tuiapp_gpu_temperature_celsius", "GPU temperature", g, registry=r)

    # ------------------------------------------------------------ sink

    async def run(self, sub: Any) -> None:
        try:
            async for event in sub:
                self.apply(event)
        finally:
            self.close()

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def apply(self, event: Any) -> None:  # noqa: C901 - one branch per event kind
        if isinstance(event, RequestDone):
            self._request(event)
        elif isinstance(event, GpuSample):
            self._gpu(event)
        elif isinstance(event, RunDone):
            trial = event.trial or self._trial
            self.runs.labels(trial).inc()
            _set(self.decode.labels(trial), event.decode_tok_s)
            _set(self.output.labels(trial), event.output_tok_s)
            _set(self.accept.labels(trial), event.accept_length)
            self.concurrency.labels(trial).set(event.concurrency)
            self._spec_run(trial, event)
        elif isinstance(event, BenchSummary):
            trial = event.trial or self._trial
            _set(self.decode_mean.labels(trial), event.mean_decode_tok_s)
            if event.ci95_decode_tok_s is not None:
                self.decode_ci.labels(trial, "low").set(event.ci95_decode_tok_s[0])
                self.decode_ci.labels(trial, "high").set(event.ci95_decode_tok_s[1])
        elif isinstance(event, Alert):
            self._alert(event)
        elif isinstance(event, TrialState):
            self._trial_state(event)
        elif isinstance(event, TrialResult):
            self.trial_results.labels(event.status).inc()
        elif isinstance(event, ServerState):
            self.server_up.set(1 if event.state in ("ready", "running") else 0)
        elif isinstance(event, ServerInfo):
            self.server_info.clear()
            self.server_info.labels(event.url, event.model_path or "", event.engine, event.version or "").set(1)
        elif isinstance(event, ServerStats):
            if event.source == "log_decode" and event.gen_throughput_tok_s is not None:
                self.server_gen.set(event.gen_throughput_tok_s)
            for gauge, value in ((self.server_kv_free, event.kv_available_tokens), (self.server_util, event.utilization),
                                 (self.server_retractions, event.retractions_total),
                                 (self.server_imbalance, event.dp_imbalance_ratio),
                                 (self.server_spec_steps, event.spec_num_steps)):
                _set(gauge, value)
            if self._startup.observe(event):
                self.server_startup.clear()  # a restarted server's phases replace the last ones
                for phase, seconds in startup_phases.parts(self._startup.phases, self._startup.graphs):
                    self.server_startup.labels(phase).set(seconds)
            if self._startup.post_startup_s is not None:
                self.server_startup.labels("after_ready").set(self._startup.post_startup_s)
        elif isinstance(event, PointDone):
            self._point(event)
        elif isinstance(event, Note):
            self.notes.labels(event.level).inc()
        # a ReplaySeek changes nothing here: counters only grow; the dashboard shows the seek

    def _request(self, e: RequestDone) -> None:
        trial = self._trial
        outcome = "cancelled" if e.cancelled else "ok" if e.ok else "error"
        self.requests.labels(trial, outcome).inc()
        if outcome == "error":  # by tuiapp.common.outcome's reason (older recordings: the error's head)
            self.request_errors.labels(trial, e.outcome or error_reason(e.error)).inc()
        if not e.ok:
            return
        if e.completion_tokens:
            self.output_tokens.labels(trial).inc(e.completion_tokens)
        for hist, value in ((self.ttft, e.ttft_s), (self.tpot, e.tpot_s), (self.itl, e.chunk_gap_mean_s),
                            (self.e2e, e.e2e_s)):
            if value is not None:
                hist.labels(trial).observe(value)

    def _spec_run(self, trial: str, e: RunDone) -> None:
        if not e.spec_accept_histogram:
            return
        for p in acceptance.per_position(e.spec_accept_histogram, e.spec_cap_histogram):
            self.spec_pos_accepted.labels(trial, str(p.position)).inc(p.accepted_steps)
            self.spec_pos_observed.labels(trial, str(p.position)).inc(p.observed_steps)
        for j, steps in enumerate(e.spec_accept_histogram):
            if steps:
                self.spec_len_steps.labels(trial, str(j + 1)).inc(steps)
        tally = self._spec.setdefault(trial, acceptance.Tally())
        tally.add(e.spec_accept_histogram, e.spec_cap_histogram)
        for p in tally.positions():
            _set(self.spec_pos_ratio.labels(trial, str(p.position)), p.rate)

    def _point(self, e: PointDone) -> None:
        if e.concurrency is not None:
            load = f"concurrency={e.concurrency}"
        elif e.request_rate is not None:
            load = f"request_rate={e.request_rate:g}"
        else:
            return
        labels = (e.trial or self._trial, load)
        _set(self.point_output.labels(*labels), e.output_tok_s)
        _set(self.point_requests.labels(*labels), e.request_throughput_req_s)
        _set(self.point_goodput.labels(*labels), e.goodput_req_s)
        _set(self.point_goodput_share.labels(*labels), e.goodput_share)
        for latency in ("ttft", "tpot", "itl", "e2e"):
            for q in ("50", "90", "99"):
                value = getattr(e, f"{latency}_p{q}_ms")
                if value is not None:
                    self.point_latency.labels(*labels, latency, f"0.{q}").set(value / 1000.0)

    def _gpu(self, e: GpuSample) -> None:
        labels = (str(e.index), e.uuid or "", e.node or "")
        for gauge, value in ((self.gpu_mem_used, e.mem_used_bytes), (self.gpu_mem_total, e.mem_total_bytes),
                             (self.gpu_tx, e.pcie_tx_bytes_s), (self.gpu_rx, e.pcie_rx_bytes_s),
                             (self.gpu_power, e.power_w), (self.gpu_temp, e.temp_c),
                             (self.gpu_util, None if e.util_pct is None else e.util_pct / 100.0)):
            if value is not None:
                gauge.labels(*labels).set(value)

    def _alert(self, e: Alert) -> None:
        ranks = ",".join(str(r) for r in e.ranks) or ",".join(f"dp{r}" for r in e.dp_ranks)
        labels = (str(e.alert_id), e.alert_kind, e.severity, ranks, e.message[:_MESSAGE_CHARS])
        old = self._incidents.get(e.alert_id)
        if old is None:
            self.incidents.labels(e.alert_kind, e.severity).inc()
        elif old != labels:
            self.incident_info.remove(*old)
        seen = set(old[3].split(",")) if old is not None and old[3] else set()
        for rank in ranks.split(",") if ranks else ():
            if rank not in seen:
                self.incident_ranks.labels(e.alert_kind, rank).inc()
        self._incidents[e.alert_id] = labels
        self.incident_info.labels(*labels).set(1)

    def _trial_state(self, e: TrialState) -> None:
        self._trial = e.name
        self.trial_index.set(e.index)
        self.trials_planned.set(e.total)
        old = self._phase.get(e.name)
        if old is not None and old != e.phase:
            self.trial_phase.remove(e.name, old)
        self._phase[e.name] = e.phase
        self.trial_phase.labels(e.name, e.phase).set(1)
        self.trial_live.labels(e.name).set(1 if e.phase in _LIVE_PHASES else 0)


def _set(gauge: Gauge, value: float | None) -> None:
    if value is not None:
        gauge.set(value)
