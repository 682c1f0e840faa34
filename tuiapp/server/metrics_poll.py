"""Server-side figures while the loop runs: /metrics (Prometheus), /server_info, and per-rank
load snapshots for the wedge detector (tuiapp.server.loads_poll, tuiapp.server.wedge).

``/metrics`` exists only with ``--enable-metrics``; a 404 turns it off for the session.
``/server_info`` needs no flag but is an RPC into the scheduler (it hangs when the
scheduler is wedged), so it gets a short timeout and is polled at most every 2 s, and only
while /metrics does not give the generation throughput (it carries nothing more).
Scheduler gauges carry ``tp_rank``/``dp_rank`` labels: series of one DP group are
replicas of the same number (TP 0 writes them), so throughputs are summed over DP groups
and other gauges averaged; the usage gauge takes the fullest group. Names are read in both
spellings, ``sglang:`` and ``sglang_`` (tuiapp.server.metric_names). Counters give window
figures from their deltas: the exact accept length (generated tokens / verify calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import httpx

from tuiapp.common import acceptance
from tuiapp.common.http_clients import DEFAULT_TIMEOUT, async_client
from tuiapp.common.ticks import until_tick_s, wait_stop
from tuiapp.events import Note, ServerStats
from tuiapp.server.info import decode_side
from tuiapp.server.loads_poll import LoadsSource
from tuiapp.server.metric_names import (
    POST_STARTUP_TIME_TOTAL,
    SERVER_PREFIX,
    STARTUP_CUDA_GRAPH_TIME,
    STARTUP_FAMILIES,
    STARTUP_TIME,
    sample_line_pattern,
)
from tuiapp.server.wedge import RankLoad, WedgeDetector

Publish = Callable[[Any], None]

# The families read, each named once by its server spelling; a router's /engine_metrics and
# Prometheus escaping give the same names with "sglang_" (tuiapp.server.metric_names).
_WANTED = {
    "sglang:gen_throughput": "gen_throughput_tok_s",
    "sglang:spec_accept_length": "accept_length",
    "sglang:spec_accept_rate": "accept_rate",
    "sglang:num_running_reqs": "running_reqs",
    "sglang:num_queue_reqs": "queue_reqs",
    "sglang:token_usage": "token_usage",
    "sglang:num_used_tokens": "num_tokens",
    "sglang:num_retracted_reqs": "retracted_reqs",
    "sglang:is_cuda_graph": "cuda_graph",
    # newer families (0.5.23): KV headroom, busy share, the adaptive step budget (#21599)
    "sglang:kv_available_tokens": "kv_available_tokens",
    "sglang:utilization": "utilization",
    "sglang:spec_num_steps": "spec_num_steps",
}
_SUMMED = {"gen_throughput_tok_s", "running_reqs", "queue_reqs", "num_tokens", "retracted_reqs", "kv_available_tokens"}
_INTS = {"running_reqs", "queue_reqs", "num_tokens", "retracted_reqs", "kv_available_tokens", "spec_num_steps"}
# Counters (every series summed, TP replicas skipped): deltas give exact window figures.
_COUNTED = {
    "sglang:generation_tokens_total": "generation_tokens",
    "sglang:spec_verify_calls_total": "verify_calls",
    "sglang:num_retracted_requests_total": "retractions_total",
    "sglang:dp_attention_token_imbalance_ratio_sum": "imbalance_sum",
    "sglang:dp_attention_token_imbalance_ratio_count": "imbalance_count",
}
SERVER_INFO_EVERY_S = 2.0
METRICS_ABSENT = "/metrics not exported (SGLang needs --enable-metrics): no running, queued or KV figures"


_ALL = {**_WANTED, **_COUNTED, **dict.fromkeys(STARTUP_FAMILIES)}
_LINE_RE = sample_line_pattern(_ALL)
_DP_RE = re.compile(r'(?:^|,)\s*dp_rank="((?:[^"\\]|\\.)*)"')
# a phase name is shown and exported as it comes: anything but a plain identifier is no reading
_PHASE_RE = re.compile(r'(?:^|,)\s*phase="([A-Za-z0-9_.:-]{1,64})"')
_TP_RE = re.compile(r'(?:^|,)\s*tp_rank="((?:[^"\\]|\\.)*)"')


def _scan(text: str) -> list[tuple[str, str | None, str]]:
    """(name in the server's spelling, labels, value text) of every sample line of the families read."""
    return [(SERVER_PREFIX + m.group(1), m.group(2), m.group(3)) for m in _LINE_RE.finditer(text)
            if (at := m.start()) == 0 or text[at - 1] == "\n"]


def _samples(text: str | list, wanted: dict[str, str] = _WANTED, tp: bool = False):
    """(name, dp_rank, value) of each sample line of the ``wanted`` families (``text``, or its
    :func:`_scan`); with ``tp``, series of TP ranks other than 0 (replicas of the same figure)
    are skipped.

    The Prometheus text format's sample lines, read with regexes: prometheus_client's parser
    walks every character in Python (~0.5 ms a poll for 18 lines, half a poll's CPU), and we
    need one or two labels."""
    for name, labels, raw in _scan(text) if isinstance(text, str) else text:
        if name not in wanted:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        dp = "0"
        if labels:
            d = _DP_RE.search(labels)
            if d is not None:
                dp = d.group(1)
            if tp:
                t = _TP_RE.search(labels)
                if t is not None and t.group(1) != "0":
                    continue
        yield name, dp, value


def parse_counters(text: str | list) -> dict[str, float]:
    """The counters of :data:`_COUNTED`, each summed over its series."""
    out: dict[str, float] = {}
    for name, _dp, value in _samples(text, _COUNTED, tp=True):
        if math.isfinite(value):
            key = _COUNTED[name]
            out[key] = out.get(key, 0.0) + value
    return out


def parse_metrics(text: str | list) -> dict[str, Any]:
    """The ServerStats fields found in a Prometheus exposition text."""
    per_dp: dict[str, dict[str, float]] = defaultdict(dict)
    for name, dp, value in _samples(text):
        if not math.isfinite(value):
            continue  # NaN/Inf is no reading
        # Several TP ranks of one DP group report the same value: keep the first.
        per_dp[dp].setdefault(_WANTED[name], value)
    out: dict[str, Any] = {}
    fields = {f for group in per_dp.values() for f in group}
    for f in fields:
        values = [group[f] for group in per_dp.values() if f in group]
        if f in _SUMMED:
            value: Any = sum(values)
        elif f == "token_usage":
            value = max(values)
        else:
            value = sum(values) / len(values)
        if f in _INTS:
            value = int(round(value))
        elif f == "cuda_graph":
            value = bool(value)
        out[f] = value
    if out.get("accept_length") == 0.0:
        out["accept_length"] = None  # gauge is 0 when speculation is off or idle
        out["accept_rate"] = None
    if out.get("spec_num_steps") == 0:
        out["spec_num_steps"] = None  # 0.5.23 exports it on every server, 0 without speculation
    return out


def parse_startup(text: str | list) -> dict[str, Any]:
    """The ServerStats start-up fields (tuiapp.common.startup_phases): per phase, the longest of
    its series (ranks start in parallel: the slowest is the critical path, as SGLang aggregates
    them); start-up work after ready summed over phases."""
    per: dict[str, dict[str, float]] = {name: {} for name in STARTUP_FAMILIES}
    for name, labels, raw in _scan(text) if isinstance(text, str) else text:
        if name not in per or not labels:
            continue
        phase = _PHASE_RE.search(labels)
        try:
            value = float(raw)
        except ValueError:
            continue
        if phase is None or not math.isfinite(value) or value < 0:
            continue
        family = per[name]
        family[phase.group(1)] = max(family.get(phase.group(1), 0.0), value)
    out: dict[str, Any] = {}
    if per[STARTUP_TIME]:
        out["startup_phases_s"] = per[STARTUP_TIME]
    if per[STARTUP_CUDA_GRAPH_TIME]:
        out["startup_cuda_graph_s"] = per[STARTUP_CUDA_GRAPH_TIME]
    if per[POST_STARTUP_TIME_TOTAL]:
        out["post_startup_s"] = sum(per[POST_STARTUP_TIME_TOTAL].values())
    return out


class CounterWindow:
    """Counter deltas between two polls: the exact accept length of the window (generated
    tokens / verify calls, tuiapp.common.acceptance) instead of the gauge's last decode-log
    window, and the mean DP-attention token imbalance of the window."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def fields(self, counters: dict[str, float]) -> dict[str, Any]:
        prev, self.last = self.last, counters
        out: dict[str, Any] = {}
        if "retractions_total" in counters:
            out["retractions_total"] = int(counters["retractions_total"])

        def delta(key: str) -> float | None:
            if key in counters and key in prev:
                return counters[key] - prev[key]
            return None

        d_verify, d_tokens = delta("verify_calls"), delta("generation_tokens")
        if d_verify is not None and d_tokens is not None:
            out["accept_length"] = acceptance.window_length(d_tokens, d_verify)
        d_sum, d_count = delta("imbalance_sum"), delta("imbalance_count")
        if d_sum is not None and d_count:
            out["dp_imbalance_ratio"] = d_sum / d_count if d_count > 0 else None
        return out


def parse_server_info(info: dict[str, Any]) -> dict[str, Any] | None:
    states = decode_side(info).get("internal_states")
    if not isinstance(states, list) or not states:
        return None
    gen = [s.get("last_gen_throughput") for s in states if isinstance(s, dict)]
    acc = [s.get("avg_spec_accept_length") for s in states if isinstance(s, dict)]
    gen = [g for g in gen if isinstance(g, (int, float))]
    acc = [a for a in acc if isinstance(a, (int, float)) and a > 0]
    return {
        "gen_throughput_tok_s": float(sum(gen)) if gen else None,
        "accept_length": sum(acc) / len(acc) if acc else None,
    }


async def run_metrics_poller(
    publish: Publish,
    base_url: str,
    *,
    api_key: str | None = None,
    interval_s: float = 1.0,
    stop: asyncio.Event | None = None,
    client: httpx.AsyncClient | None = None,
    wedge_detection: bool = True,
    detector: WedgeDetector | None = None,
) -> None:
    """``client``: the session's client of this server (carrying ``api_key``), else one of its own.
    ``wedge_detection``: also read per-rank load snapshots each tick and flag a wedged rank
    (tuiapp.server.wedge)."""
    base_url = base_url.rstrip("/")
    metrics_on = True
    info_on = True
    next_info_s = 0.0
    state = MetricsState()
    loads = LoadsSource(base_url) if wedge_detection else None
    detector = detector or WedgeDetector()
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(async_client(base_url, api_key=api_key))
        while stop is None or not stop.is_set():
            has_throughput = False
            if metrics_on:
                metrics_on, has_throughput = await _poll_metrics(client, base_url, publish, state)
                if not metrics_on:  # the dashboard's server panel says why its figures are missing
                    publish(Note(source="metrics", text=METRICS_ABSENT))
            now = time.monotonic()
            # /server_info carries the same two figures: asked only while /metrics lacks them
            # (each ask is a scheduler RPC, an access-log line and a wake-up here)
            if info_on and not has_throughput and now >= next_info_s:
                next_info_s = now + max(interval_s, SERVER_INFO_EVERY_S)
                info_on = await _poll_server_info(client, base_url, publish)
            # an idle server (per /metrics) has nothing to wedge on: no ask until requests come
            if loads is not None and loads.due(now) and state.busy is not False:
                judged, ranks = await loads.poll(client, now, interval_s, before_server_info=metrics_on)
                source = loads.path
                if loads.at_server_info and metrics_on:
                    # the scheduler's own gauges freeze with it too, and cost no scheduler RPC
                    ranks = metrics_ranks(state.text) if state.text is not None else None
                    judged, source, state.text = ranks is not None, "/metrics", None
                if judged:
                    detector.source = source or detector.source
                    for event in detector.observe(time.monotonic(), ranks, busy_hint=state.busy):
                        publish(event)
            # to the next tick of the grid the samplers use: one wake-up for all of them
            await wait_stop(stop, until_tick_s(interval_s))


class MetricsState:
    """What one /metrics poll leaves for the next and for the wedge detector."""

    def __init__(self) -> None:
        self.window = CounterWindow()
        self.busy: bool | None = None  # requests running or queued
        self.text: str | None = None  # the latest body, until the wedge detector read it
        self.startup: dict[str, Any] = {}  # the start-up fields last published


def metrics_ranks(text: str) -> list[RankLoad]:
    """Per DP group: its running and queued requests and throughput, stamped with every gauge
    the scheduler rewrites as it works (they all stop when it wedges)."""
    per_dp: dict[str, dict[str, float]] = defaultdict(dict)
    for name, dp, value in _samples(text):
        per_dp[dp].setdefault(_WANTED[name], value)
    out = []
    for dp, g in sorted(per_dp.items()):
        running, queued = g.get("running_reqs"), g.get("queue_reqs")
        out.append(RankLoad(int(dp) if dp.isdigit() else len(out),
                            int(running) if running is not None else None, int(queued) if queued is not None else None,
                            g.get("gen_throughput_tok_s"), tuple(sorted(g.items()))))
    return out


async def _poll_metrics(client: httpx.AsyncClient, base_url: str, publish: Publish,
                        state: MetricsState | None = None) -> tuple[bool, bool]:
    """(the endpoint exists, it gave the generation throughput); the first is False for a
    server without --enable-metrics."""
    try:
        resp = await client.get(base_url + "/metrics", timeout=DEFAULT_TIMEOUT)
    except httpx.HTTPError:
        return True, False  # down for now; the loop says so, we keep trying
    if resp.status_code == 404:
        return False, False
    if resp.status_code != 200:
        return True, False
    try:
        text = resp.text
        scanned = _scan(text)  # once, for the gauges and the counters
        fields = parse_metrics(scanned)
        if state is not None:
            counted = state.window.fields(parse_counters(scanned))
            if "accept_length" in counted:
                # exact over the window, where the server counts verify calls; None while idle
                fields["accept_length"] = counted.pop("accept_length")
            fields.update(counted)
            state.text = text
        startup = parse_startup(scanned)
        if state is not None:
            # constants of a server's life: published when first seen and after a restart
            changed = {k: v for k, v in startup.items() if state.startup.get(k) != v}
            state.startup.update(changed)
            startup = changed
        fields.update(startup)
    except ValueError:
        return True, False  # a torn or non-Prometheus body; the next poll may be fine
    if state is not None and ("running_reqs" in fields or "queue_reqs" in fields):
        state.busy = (fields.get("running_reqs") or 0) + (fields.get("queue_reqs") or 0) > 0
    if fields:
        publish(ServerStats(source="metrics", **fields))
    return True, fields.get("gen_throughput_tok_s") is not None


async def _poll_server_info(client: httpx.AsyncClient, base_url: str, publish: Publish) -> bool:
    for path in ("/server_info", "/get_server_info"):
        try:
            resp = await client.get(base_url + path, timeout=DEFAULT_TIMEOUT)
        except httpx.HTTPError:
            return True
        if resp.status_code == 404:
            continue
        if resp.status_code != 200:
            return True
        try:
            fields = parse_server_info(resp.json())
        except (ValueError, AttributeError, TypeError):
            return True
        if fields and any(v is not None for v in fields.values()):
            publish(ServerStats(source="server_info", **fields))
        return True
    return False
