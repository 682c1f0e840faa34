"""Every event the bus carries: the contract between sources and sinks.

Events are frozen pydantic models with a ``kind`` discriminator. ``t_s`` is wall-clock
Unix time in seconds (so events from several processes and threads line up; replay
computes offsets from the recording's header). Units are in field names. ``None`` means
"not known / not supported" and is shown as n/a, never as 0.

One adapter, :data:`EVENT_ADAPTER`, reads any event from JSON; :func:`dump_event` and
:func:`load_event` are the only (de)serialisers, used by the recorder and replay alike.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter


def now_s() -> float:
    return time.time()


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    t_s: float = Field(default_factory=now_s)


# ---------------------------------------------------------------- server lifecycle

ServerStateName = Literal["starting", "ready", "running", "failed", "stopping", "stopped", "unreachable"]


class ServerState(_Event):
    """The server's lifecycle as the launcher or attacher sees it."""

    kind: Literal["server_state"] = "server_state"
    state: ServerStateName
    url: str | None = None
    pid: int | None = None
    exit_code: int | None = None
    message: str = ""
    startup_s: float | None = None


class ServerInfo(_Event):
    """What the server says about itself (from /model_info and /server_info)."""

    kind: Literal["server_info"] = "server_info"
    url: str
    model_path: str | None = None
    engine: str = "sglang"  # "sglang", or "openai" for another OpenAI-compatible server
    version: str | None = None
    tp_size: int | None = None
    ep_size: int | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    server_args: dict[str, Any] = Field(default_factory=dict)


class LogLine(_Event):
    """One record from the server's log (a traceback stays one record, several lines)."""

    kind: Literal["log"] = "log"
    line_no: int  # 1-based, counting "\n" only (as grep -n does)
    text: str
    tp_rank: int | None = None
    dp_rank: int | None = None
    ep_rank: int | None = None
    level: Literal["info", "warning", "error"] = "info"


class ServerStats(_Event):
    """Server-side figures: a Decode/Prefill log line, a /metrics or /server_info poll."""

    kind: Literal["server_stats"] = "server_stats"
    source: Literal["log_decode", "log_prefill", "metrics", "server_info"]
    dp_rank: int | None = None
    gen_throughput_tok_s: float | None = None
    input_throughput_tok_s: float | None = None
    accept_length: float | None = None
    accept_rate: float | None = None
    running_reqs: int | None = None
    queue_reqs: int | None = None
    token_usage: float | None = None
    num_tokens: int | None = None
    new_seqs: int | None = None
    new_tokens: int | None = None
    cached_tokens: int | None = None
    cuda_graph: bool | None = None
    retracted_reqs: int | None = None
    # newer /metrics families (issue 43): KV headroom, busy share, retractions so far, the mean
    # DP-attention token imbalance, the current (adaptive) speculative step budget
    kv_available_tokens: int | None = None
    utilization: float | None = None
    retractions_total: int | None = None
    dp_imbalance_ratio: float | None = None
    spec_num_steps: int | None = None
    # the server's own start-up breakdown (tuiapp.common.startup_phases): phase -> seconds, CUDA
    # graph phase -> seconds, start-up work done after ready; sent when first seen or changed
    startup_phases_s: dict[str, float] | None = None
    startup_cuda_graph_s: dict[str, float] | None = None
    post_startup_s: float | None = None


AlertKind = Literal[
    "oom", "assertion", "keyerror", "jit_arch", "nccl", "crash", "hang", "kv_pressure",
    "error", "timeout", "gpu_lost", "xid", "numerical",
    # failure families read from logs (docs/failure-detector.md)
    "transfer", "request", "cuda_fault", "ep_bootstrap",
]


class Alert(_Event):
    """A failure or warning, grouped across ranks (8 identical tracebacks = one alert)."""

    kind: Literal["alert"] = "alert"
    alert_kind: AlertKind
    severity: Literal["error", "warning"] = "error"
    message: str  # the line a human needs: e.g. "torch.OutOfMemoryError: CUDA out of memory. ..."
    ranks: list[int] = Field(default_factory=list)  # TP ranks; empty when not rank-specific
    first_line: int | None = None  # 1-based log line where the incident starts
    traceback: str = ""
    source: str = "log"  # log | nvml | bench | launcher
    alert_id: int = 0  # same id again = an update (more ranks joined the group)
    nodes: list[str] = Field(default_factory=list)  # labelled log sources (attach --log NODE=...) it was seen on
    signature_line: int | None = None  # the decisive line: where the message was read
    caused_by: int | None = None  # a crash: alert_id of the error it followed
    # records that joined the incident (ranks, and for per-request failures each request);
    # recordings written before this field read as 1
    count: int = 1
    dp_ranks: list[int] = Field(default_factory=list)  # DP ranks (a wedged rank seen in /v1/loads)
    # (line, message) of the other failures that joined this one as its knock-ons or its burst (a
    # 500 answered for it, the launcher's traceback after a death, the next ERROR line): told, not
    # raised again; the first MAX_JOINED of them
    joined: list[tuple[int, str]] = Field(default_factory=list)
    # the decisive lines of the records counted into it after its first (each rank's copy of one traceback,
    # each 500 of a burst): where the count came from; the first MAX_JOINED of them
    repeats: list[int] = Field(default_factory=list)


# ---------------------------------------------------------------- benchmark loop

BenchStateName = Literal["warming_up", "running", "paused", "waiting_server", "stopped", "done", "failed"]


class BenchState(_Event):
    kind: Literal["bench_state"] = "bench_state"
    state: BenchStateName
    message: str = ""


class RequestDone(_Event):
    """One benchmark request, measured on the client."""

    kind: Literal["request"] = "request"
    run_index: int
    request_index: int
    ok: bool = True
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_s: float | None = None
    # TPOT = (e2e - ttft) / (completion_tokens - 1) (older recordings: itl_s)
    tpot_s: float | None = Field(None, validation_alias=AliasChoices("tpot_s", "itl_s"))
    e2e_s: float | None = None
    decode_tok_s: float | None = None  # (completion_tokens - 1) / (e2e - ttft)
    chunks: int | None = None
    tokens_per_chunk: float | None = None  # client-side cross-check of acceptance
    chunk_gap_mean_s: float | None = None
    accept_length: float | None = None
    accept_rate: float | None = None
    spec_verify_ct: int | None = None
    # H[j] = verify steps that accepted exactly j drafts; caps: C[c] = steps whose budget was c
    # drafts (tuiapp.common.acceptance)
    spec_accept_histogram: list[int] | None = None
    spec_cap_histogram: list[int] | None = None
    finish_reason: str | None = None
    numerical_fault: bool = False  # finish_reason stop "NaN happened"
    cancelled: bool = False  # cut off by our own stop (quit, SIGINT, end of runs): not a failure
    outcome: str | None = None  # tuiapp.common.outcome.classify: ok, refused, http_error, timeout, ...


class RunDone(_Event):
    """K requests make a run; per-run figures."""

    kind: Literal["run"] = "run"
    run_index: int
    requests: int
    errors: int = 0
    errors_by_reason: dict[str, int] = Field(default_factory=dict)  # outcome -> failed requests
    first_error: str | None = None  # the reason of the run's first failed request
    concurrency: int = 1
    duration_s: float
    decode_tok_s: float | None  # mean single-stream decode rate of the run's requests
    output_tok_s: float | None  # aggregate: completion tokens / run wall time
    ttft_s: float | None = None
    tpot_s: float | None = Field(None, validation_alias=AliasChoices("tpot_s", "itl_s"))  # mean TPOT
    accept_length: float | None = None
    accept_rate: float | None = None
    spec_accept_histogram: list[int] | None = None  # the run's requests' histograms, summed
    spec_cap_histogram: list[int] | None = None
    trial: str | None = None
    request_rate: float | None = None  # open loop: the target arrival rate (req/s)
    point_index: int = 0  # which load point of a sweep


class PointDone(_Event):
    """One load point of a sweep (or the one point) finished: its ``runs`` runs pooled.

    Built by tuiapp.bench.points.point_event only. Latencies are percentiles over the point's
    successful requests (TTFT, TPOT, ITL, e2e as tuiapp/common/outcome.py names them; open
    loop: from each request's scheduled send time). Failed requests count, by reason, in
    ``errors``, the shares and goodput (docs/load-curves.md)."""

    kind: Literal["point"] = "point"
    point_index: int
    concurrency: int | None = None  # closed loop
    request_rate: float | None = None  # open loop: the target
    max_concurrency: int | None = None
    # open loop: the rate of the arrivals drawn (a Poisson draw of 32 is not exactly R)
    offered_request_rate: float | None = Field(None, validation_alias=AliasChoices(
        "offered_request_rate", "scheduled_request_rate"))
    # requests sent / sending time: sent / offered says whether the client kept its schedule
    sent_request_rate: float | None = Field(None, validation_alias=AliasChoices(
        "sent_request_rate", "achieved_request_rate"))
    served_request_rate: float | None = None  # successful requests back per second
    client_lag_p50_ms: float | None = None  # open loop: send time - scheduled time
    client_lag_p99_ms: float | None = None
    runs: int
    requests: int
    errors: int = 0
    errors_by_reason: dict[str, int] = Field(default_factory=dict)  # outcome -> failed requests
    first_error: str | None = None
    refused_share: float | None = None  # refused (queue full) / requests
    duration_s: float
    output_tok_s: float | None = None  # completion tokens / wall time, all runs pooled
    output_tok_s_runs: list[float] = Field(default_factory=list)  # per run: what Welch compares
    decode_tok_s_runs: list[float] = Field(default_factory=list)  # per run: mean per-stream decode
    request_throughput_req_s: float | None = None
    decode_tok_s: float | None = None  # mean per-request decode rate
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p90_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p90_ms: float | None = None
    itl_p99_ms: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p90_ms: float | None = None
    e2e_p99_ms: float | None = None
    goodput_req_s: float | None = None  # with an SLO: requests/s that met every goal
    goodput_share: float | None = None  # met / requests (failed requests count as missed)
    # the successful requests' acceptance histograms, pooled (tuiapp.common.acceptance)
    spec_accept_histogram: list[int] | None = None
    spec_cap_histogram: list[int] | None = None
    trial: str | None = None
    search: bool = False  # a probe of --find-max-load


class RunFigures:
    """A RunDone's figures as a long job keeps them: a slotted object of a fifth the size of
    the pydantic event (a headless soak at concurrency 4 finishes ~1,200 runs an hour, and
    each was held twice, for the summary and the statistics). Same attribute names."""

    __slots__ = ("run_index", "t_s", "trial", "requests", "errors", "first_error", "decode_tok_s",
                 "output_tok_s", "ttft_s", "tpot_s", "accept_length", "point_index",
                 "spec_accept_histogram", "spec_cap_histogram")

    def __init__(self, run: RunDone) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(run, name))


class BenchSummary(_Event):
    """Across runs: mean, sd and 95% confidence interval of decode tok/s."""

    kind: Literal["bench_summary"] = "bench_summary"
    runs: int
    mean_decode_tok_s: float | None
    sd_decode_tok_s: float | None
    ci95_decode_tok_s: tuple[float, float] | None = None
    mean_output_tok_s: float | None = None
    accept_length: float | None = None
    trial: str | None = None


# ---------------------------------------------------------------- telemetry


class GpuSample(_Event):
    """One GPU, averaged over the sampler's display interval."""

    kind: Literal["gpu"] = "gpu"
    index: int
    uuid: str | None = None
    name: str | None = None
    node: str | None = None  # host name for remote (dcgm-exporter) GPUs
    mem_used_bytes: int | None = None
    mem_reserved_bytes: int | None = None
    mem_total_bytes: int | None = None
    util_pct: float | None = None
    pcie_tx_bytes_s: float | None = None
    pcie_rx_bytes_s: float | None = None
    pcie_method: str | None = None  # "counters" | "throughput" | "sim" | "dcgm"
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    pcie_replay_count: int | None = None
    nvlink_tx_bytes_s: float | None = None
    nvlink_rx_bytes_s: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None  # the enforced board limit: what power_w is measured against
    temp_c: float | None = None
    sm_clock_mhz: int | None = None
    clock_event_reasons: int | None = None


class HostSample(_Event):
    kind: Literal["host"] = "host"
    cpu_pct: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    server_rss_bytes: int | None = None


# ---------------------------------------------------------------- trials


class TrialState(_Event):
    kind: Literal["trial"] = "trial"
    name: str
    index: int
    total: int
    phase: Literal["preflight", "launching", "warming_up", "running", "stopping", "done", "failed", "skipped"]
    message: str = ""


class TrialResult(_Event):
    """One ledger row (see tuiapp/trials)."""

    kind: Literal["trial_result"] = "trial_result"
    name: str
    status: str  # "ok" or a failure kind
    row: dict[str, Any] = Field(default_factory=dict)


class TrialJob(_Event):
    """A trial's Slurm job as the campaign view shows it (trials --slurm): published when its
    state, figures or incidents change."""

    kind: Literal["trial_job"] = "trial_job"
    trial: str
    job_id: str
    state: str  # Slurm's: PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, TIMEOUT...
    nodes: list[str] = Field(default_factory=list)
    reason: str | None = None  # why it waits (Resources, Priority) or why tuiapp cancelled it
    queue_wait_s: float | None = None
    url: str | None = None
    decode_tok_s: float | None = None  # its latest run
    runs: int = 0
    incidents: int = 0  # error alerts seen in its nodes' logs
    last_incident: str | None = None


# ---------------------------------------------------------------- misc


class Note(_Event):
    """A one-line message for the user (e.g. "telemetry off: no NVIDIA driver")."""

    kind: Literal["note"] = "note"
    level: Literal["info", "warning", "error"] = "info"
    text: str
    source: str = ""


class OutputCheck(_Event):
    """The benchmark's output at temperature 0 (bench ``check_output``): a digest of each
    checked prompt's text, sent one at a time before the runs; a trial whose digests differ
    from its reference's produced other output, and its speed is not comparable."""

    kind: Literal["output_check"] = "output_check"
    digests: dict[str, str]  # prompt index -> sha256 of the output text (16 hex digits)
    trial: str | None = None


class ReplaySeek(_Event):
    """Replay jumped: clear what you show; the state at ``position_s`` is published next."""

    kind: Literal["replay_seek"] = "replay_seek"
    position_s: float  # seconds since the recording started


Event = Annotated[
    ServerState | ServerInfo | LogLine | ServerStats | Alert | BenchState | RequestDone
    | RunDone | PointDone | BenchSummary | GpuSample | HostSample | TrialState | TrialResult | Note
    | ReplaySeek | TrialJob | OutputCheck,
    Field(discriminator="kind"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

# The kinds that come every second or more often (samples, log records, server figures,
# requests): a sink that only counts or keeps them takes them in its next wake-up, at most
# about a second later (EventBus.subscribe's lazy_kinds); the rest wake it at once.
DENSE_KINDS = frozenset({"gpu", "host", "log", "server_stats", "request"})


def dump_event(event: _Event) -> bytes:
    """One event as compact JSON bytes (no newline)."""
    return orjson.dumps(event.model_dump(mode="json"))


def load_event(data: bytes | str) -> _Event:
    """Parse one event; raises pydantic.ValidationError or orjson.JSONDecodeError."""
    return EVENT_ADAPTER.validate_python(orjson.loads(data))
