"""A wedged scheduler rank, seconds after it stops, from per-DP-rank load snapshots.

SGLang's own watchdog kills a scheduler that made no progress for ``--watchdog-timeout``
(300 s by default). Each scheduler also publishes a load snapshot every iteration, which
``/v1/loads`` reads from shared memory without asking the scheduler (tuiapp.server.loads_poll):
a working rank's snapshot changes every step (tokens in use, throughput), a wedged rank's
stops. So a rank is flagged when

* its snapshot (its ``timestamp`` where the server sends one, else all its figures) has not
  changed for ``stall_s`` while it holds running or waiting requests, or
* its generation throughput stayed 0 for ``starved_s`` while requests waited.

Over the RPC fallbacks (``/get_load``, ``/server_info``) an answer proves every scheduler
alive and a timed-out ask counts as a snapshot that did not change.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tuiapp.events import Alert, Note

STALL_S = 5.0  # a working rank publishes every step: 5 s unchanged is far outside noise
STARVED_S = 15.0  # no throughput while requests wait: a long prefill can take seconds, so longer
WEDGE_ALERT_ID = 4_100_000  # + incident number: ids of their own beside the log watcher's
# numbered across detectors: each trial's poller has its own, and sinks key incidents by id
_INCIDENTS = itertools.count(1)


@dataclass(slots=True)
class RankLoad:
    dp_rank: int
    running: int | None
    waiting: int | None
    gen_throughput: float | None
    stamp: object  # what moves while the rank works


@dataclass(slots=True)
class _Track:
    stamp: object
    since_s: float  # when this stamp was first seen (or the rank was last idle)
    load: RankLoad
    starved_since_s: float | None = None


class WedgeDetector:
    """Feed it every poll's snapshots (or None for a poll that got no answer); it returns the
    events to publish: a ``hang`` Alert naming the wedged DP ranks (one alert per incident,
    re-sent as ranks join) and a Note when a flagged rank moves again."""

    def __init__(self, *, stall_s: float = STALL_S, starved_s: float = STARVED_S, source: str = "/v1/loads") -> None:
        self.stall_s, self.starved_s, self.source = stall_s, starved_s, source
        self._tracks: dict[int, _Track] = {}
        self._flagged: dict[int, tuple[float, str]] = {}  # rank -> (when flagged, "stall" | "starved")
        self._incident = 0
        self._alert_ranks: list[int] = []

    @property
    def wedged(self) -> list[int]:
        return sorted(self._flagged)

    def observe(self, now_s: float, loads: list[RankLoad] | None, *, busy_hint: bool | None = None) -> list:
        out: list = []
        stale = loads is None
        if loads is None:  # no answer: every known rank stands still
            loads = [t.load for t in self._tracks.values()]
        for load in loads:
            if (stale or load.running is None and load.waiting is None) and busy_hint is not None:
                busy = busy_hint  # the last answer's counts are old news: /metrics is fresher
            else:
                busy = (load.running or 0) + (load.waiting or 0) > 0
            track = self._tracks.get(load.dp_rank)
            flagged = self._flagged.get(load.dp_rank)
            if track is None or track.stamp != load.stamp:
                if flagged is not None and flagged[1] == "stall":
                    out.append(self._recovered(now_s, load.dp_rank))
                starved = track.starved_since_s if track is not None else None
                track = self._tracks[load.dp_rank] = _Track(load.stamp, now_s, load, starved)
            if not busy:
                track.since_s = now_s  # an idle rank does not publish: standing still is fine
            waiting = (load.waiting or 0) > 0
            if waiting and load.gen_throughput == 0.0:
                if track.starved_since_s is None:
                    track.starved_since_s = now_s
            else:
                track.starved_since_s = None
                if flagged is not None and flagged[1] == "starved":
                    out.append(self._recovered(now_s, load.dp_rank))
            if load.dp_rank in self._flagged:
                continue
            still_s = now_s - track.since_s
            starved_s = now_s - track.starved_since_s if track.starved_since_s is not None else 0.0
            if busy and still_s >= self.stall_s:
                out.append(self._flag(now_s, load, "stall", f"its load snapshot has not changed for {still_s:.0f} s"))
            elif starved_s >= self.starved_s:
                out.append(self._flag(now_s, load, "starved", f"no tokens generated for {starved_s:.0f} s"))
        return out

    def _flag(self, now_s: float, load: RankLoad, rule: str, why: str) -> Alert:
        if not self._flagged:
            self._incident = next(_INCIDENTS)
            self._alert_ranks = []
        self._flagged[load.dp_rank] = (now_s, rule)
        self._alert_ranks = sorted({*self._alert_ranks, load.dp_rank})
        held = []
        if load.running is not None:
            held.append(f"{load.running} running")
        if load.waiting is not None:
            held.append(f"{load.waiting} waiting")
        with_reqs = f" with {' and '.join(held)}" if held else ""
        ranks = ", ".join(str(r) for r in self._alert_ranks)
        return Alert(
            alert_kind="hang",
            message=f"DP rank {ranks} wedged: {why}{with_reqs} ({self.source}; "
                    "SGLang's watchdog fires only after --watchdog-timeout, 300 s by default)",
            source="loads", dp_ranks=list(self._alert_ranks), count=len(self._alert_ranks),
            alert_id=WEDGE_ALERT_ID + self._incident,
        )

    def _recovered(self, now_s: float, dp_rank: int) -> Note:
        flagged_s, _rule = self._flagged.pop(dp_rank)
        return Note(level="info", source="loads",
                    text=f"DP rank {dp_rank} is moving again ({now_s - flagged_s:.0f} s after it was flagged wedged)")
