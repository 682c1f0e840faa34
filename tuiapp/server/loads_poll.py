"""Per-DP-rank load snapshots for the wedge detector: ``/v1/loads``, else ``/get_load``, else ``/server_info``.

``/v1/loads`` (SGLang #23010, #26348, #30525) reads each scheduler's snapshot from shared
memory: it answers while a scheduler is wedged, and costs the server no scheduler call, so it
is asked every poller tick, with ``include=core`` (the smallest body). Servers without it
(404) get ``/get_load`` (before #23010: a list of ``{dp_rank, num_reqs, num_waiting_reqs,
num_tokens}``), then ``/server_info`` (where /metrics is exported its scheduler gauges stand
in instead: tuiapp.server.metrics_poll): both are scheduler RPCs, so they are asked at most every
``RPC_EVERY_S``, an answer proves every scheduler alive and a timeout is a snapshot that did
not change (tuiapp.server.wedge). A server with none of the three (404 on all, or not SGLang)
turns the source off.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from tuiapp.server.info import decode_side
from tuiapp.server.wedge import RankLoad

RPC_EVERY_S = 2.0
RPC_TIMEOUT_S = 2.0  # an RPC a working scheduler answers in milliseconds
LOADS_TIMEOUT_S = 2.0
_CORE = ("num_running_reqs", "num_waiting_reqs", "num_used_tokens", "num_total_tokens", "token_usage",
         "gen_throughput", "utilization", "num_waiting_uncached_tokens")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def _int(value: Any) -> int | None:
    v = _num(value)
    return int(v) if v is not None else None


def parse_v1_loads(body: Any) -> list[RankLoad] | None:
    """Ranks of a ``/v1/loads`` body; the stamp is the rank's ``timestamp`` where sent (SGLang's
    own JSON leaves it out), else its figures, which change every scheduler step."""
    loads = body.get("loads") if isinstance(body, dict) else None
    if not isinstance(loads, list):
        return None
    out = []
    for i, load in enumerate(loads):
        if not isinstance(load, dict):
            continue
        rank = _int(load.get("dp_rank"))
        stamp = load.get("timestamp")
        if _num(stamp) is None:
            stamp = tuple(load.get(k) if isinstance(load.get(k), (int, float, str)) else None for k in _CORE)
        out.append(RankLoad(rank if rank is not None else i, _int(load.get("num_running_reqs")),
                            _int(load.get("num_waiting_reqs")), _num(load.get("gen_throughput")), stamp))
    return out


def parse_get_load(body: Any, stamp: object) -> list[RankLoad] | None:
    """``/get_load``'s list (or a newer server's ``/v1/loads`` body behind the shim)."""
    if isinstance(body, dict):
        return parse_v1_loads(body)
    if not isinstance(body, list):
        return None
    out = []
    for i, load in enumerate(body):
        if not isinstance(load, dict):
            continue
        rank = _int(load.get("dp_rank"))
        reqs, waiting = _int(load.get("num_reqs")), _int(load.get("num_waiting_reqs"))
        running = reqs - waiting if reqs is not None and waiting is not None else reqs
        out.append(RankLoad(rank if rank is not None else i, running, waiting, None, stamp))
    return out


def parse_server_info_ranks(info: Any, stamp: object) -> list[RankLoad] | None:
    states = decode_side(info).get("internal_states") if isinstance(info, dict) else None
    if not isinstance(states, list) or not states:
        return None
    return [RankLoad(i, None, None, _num(s.get("last_gen_throughput")) if isinstance(s, dict) else None, stamp)
            for i, s in enumerate(states)]


class LoadsSource:
    """The first of the three endpoints the server serves, asked at its own pace."""

    PATHS = ("/v1/loads?include=core", "/get_load", "/server_info")

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.index = 0  # into PATHS; len(PATHS) = off
        self.next_s = 0.0
        self._answers = itertools.count()

    @property
    def path(self) -> str | None:
        return self.PATHS[self.index].split("?")[0] if self.index < len(self.PATHS) else None

    @property
    def is_rpc(self) -> bool:
        return self.index > 0

    def due(self, now_s: float) -> bool:
        return self.index < len(self.PATHS) and now_s >= self.next_s

    @property
    def at_server_info(self) -> bool:
        return self.index == 2

    async def poll(self, client: httpx.AsyncClient, now_s: float, interval_s: float, *,
                   before_server_info: bool = False) -> tuple[bool, list[RankLoad] | None]:
        """(got an answer or a timeout worth judging, the ranks; None: no answer).
        ``before_server_info``: stop short of /server_info (the caller has a cheaper stand-in)."""
        while self.index < len(self.PATHS):
            if before_server_info and self.at_server_info:
                return False, None
            path = self.PATHS[self.index]
            rpc = self.index > 0
            self.next_s = now_s + (max(interval_s, RPC_EVERY_S) if rpc else interval_s)
            try:
                resp = await client.get(self.base_url + path, timeout=RPC_TIMEOUT_S if rpc else LOADS_TIMEOUT_S)
            except httpx.TimeoutException:
                return True, None  # a scheduler that does not answer: judged as standing still
            except httpx.HTTPError:
                return False, None  # down or restarting: the launcher and the loop say so
            if resp.status_code in (404, 405):
                self.index += 1
                continue
            if resp.status_code != 200:
                return False, None
            try:
                body = resp.json()
            except ValueError:
                return False, None
            stamp = next(self._answers)  # an RPC answered: every scheduler is alive
            ranks = (parse_v1_loads(body) if self.index == 0 else
                     parse_get_load(body, stamp) if self.index == 1 else parse_server_info_ranks(body, stamp))
            if ranks is None:
                self.index += 1  # a body of another shape: not this server's endpoint
                continue
            return True, ranks
        return False, None
