"""Server-side figures while the loop runs: /metrics (Prometheus) and /server_info.

``/metrics`` exists only with ``--enable-metrics``; a 404 turns it off for the session.
``/server_info`` needs no flag but is an RPC into the scheduler (it hangs when the
scheduler is wedged), so it gets a short timeout and is polled at most every 2 s, and only
while /metrics does not give the generation throughput (it carries nothing more).
Scheduler gauges carry ``tp_rank``/``dp_rank`` labels: series of one DP group are
replicas of the same number (TP 0 writes them), so throughputs are summed over DP groups
and other gauges averaged; the usage gauge takes the fullest group.
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

from tuiapp.common.http_clients import DEFAULT_TIMEOUT, async_client
from tuiapp.common.ticks import until_tick_s, wait_stop
from tuiapp.events import Note, ServerStats
from tuiapp.server.info import decode_side

Publish = Callable[[Any], None]

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
}
_SUMMED = {"gen_throughput_tok_s", "running_reqs", "queue_reqs", "num_tokens", "retracted_reqs"}
_INTS = {"running_reqs", "queue_reqs", "num_tokens", "retracted_reqs"}
SERVER_INFO_EVERY_S = 2.0
METRICS_ABSENT = "/metrics not exported (SGLang needs --enable-metrics): no running, queued or KV figures"


_NAMES = tuple(_WANTED)


_SAMPLE_RE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+\S+)?[ \t]*$")
_DP_RE = re.compile(r'(?:^|,)\s*dp_rank="((?:[^"\\]|\\.)*)"')


def _samples(text: str):
    """(name, dp_rank, value) of each sample line of the families we read.

    The Prometheus text format's sample lines, read with two regexes: prometheus_client's
    parser walks every character in Python (~0.5 ms a poll for 18 lines, half a poll's CPU),
    and we need one label. Comments and other families are skipped by their first bytes."""
    for line in text.splitlines():
        if not line.startswith(_NAMES):
            continue
        m = _SAMPLE_RE.match(line)
        if m is None:
            continue
        name, labels, raw = m.groups()
        if name not in _WANTED:
            continue  # a longer name with the same start (_total, _created, _bucket...)
        try:
            value = float(raw)
        except ValueError:
            continue
        dp = "0"
        if labels:
            d = _DP_RE.search(labels)
            if d is not None:
                dp = d.group(1)
        yield name, dp, value


def parse_metrics(text: str) -> dict[str, Any]:
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
) -> None:
    """``client``: the session's client of this server (carrying ``api_key``), else one of its own."""
    base_url = base_url.rstrip("/")
    metrics_on = True
    info_on = True
    next_info_s = 0.0
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(async_client(base_url, api_key=api_key))
        while stop is None or not stop.is_set():
            has_throughput = False
            if metrics_on:
                metrics_on, has_throughput = await _poll_metrics(client, base_url, publish)
                if not metrics_on:  # the dashboard's server panel says why its figures are missing
                    publish(Note(source="metrics", text=METRICS_ABSENT))
            now = time.monotonic()
            # /server_info carries the same two figures: asked only while /metrics lacks them
            # (each ask is a scheduler RPC, an access-log line and a wake-up here)
            if info_on and not has_throughput and now >= next_info_s:
                next_info_s = now + max(interval_s, SERVER_INFO_EVERY_S)
                info_on = await _poll_server_info(client, base_url, publish)
            # to the next tick of the grid the samplers use: one wake-up for all of them
            await wait_stop(stop, until_tick_s(interval_s))


async def _poll_metrics(client: httpx.AsyncClient, base_url: str, publish: Publish) -> tuple[bool, bool]:
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
        fields = parse_metrics(resp.text)
    except ValueError:
        return True, False  # a torn or non-Prometheus body; the next poll may be fine
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
