"""Findings -> Alert events, one per incident.

The same failure (kind + normalised message) from more ranks within the group window is
one incident: it is re-published with the same ``alert_id`` and the grown rank list, and
consumers replace by id. Closeness is judged on log timestamps when both records have
one (so a finished log groups the way it did live) and on arrival time otherwise.

Crash lines (sigquit, ``crashed with exit code``, ``died during initialization``) that
follow an error incident within CONSEQUENCE_S are its consequences, not a new incident:
they are folded into an earlier crash incident or dropped after any other error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from tuiapp.events import Alert
from tuiapp.logwatch.classify import PRIORITY, Finding

CONSEQUENCE_S = 30.0
KV_PRESSURE_WINDOW_S = 60.0  # retractions come in episodes; one alert per episode
MAX_TRACEBACK_CHARS = 64 * 1024
MAX_INCIDENTS = 10_000

# Process-wide, so two watchers (e.g. a relaunch) never reuse an id on one bus.
_alert_ids = itertools.count(1)


@dataclass(slots=True)
class Incident:
    alert_id: int
    kind: str
    severity: str
    signature: str
    message: str
    first_line: int
    traceback: str
    has_traceback: bool
    last_log_t: float | None
    last_wall_s: float
    ranks: list[int] = field(default_factory=list)

    def to_alert(self) -> Alert:
        return Alert(
            alert_kind=self.kind,  # type: ignore[arg-type]
            severity=self.severity,  # type: ignore[arg-type]
            message=self.message,
            ranks=sorted(self.ranks),
            first_line=self.first_line,
            traceback=self.traceback,
            source="log",
            alert_id=self.alert_id,
        )


class AlertGrouper:
    def __init__(self, publish: Callable[[Alert], None], window_s: float) -> None:
        self._publish = publish
        self.window_s = window_s
        self.incidents: list[Incident] = []
        self._by_sig: dict[tuple[str, str], Incident] = {}

    @staticmethod
    def _near(inc: Incident, log_t: float | None, wall_s: float, window_s: float) -> bool:
        if log_t is not None and inc.last_log_t is not None:
            return abs(log_t - inc.last_log_t) <= window_s
        return abs(wall_s - inc.last_wall_s) <= window_s

    def add(self, f: Finding, ranks: list[int], line_no: int, text: str,
            log_t: float | None, wall_s: float, into: Incident | None = None) -> Incident | None:
        """The incident the finding joined or opened (None: folded away as a consequence).
        ``into``: the incident of the record this one continues (a traceback that arrived
        in pieces): the finding joins it whatever its wording."""
        ranks = sorted(set(ranks))
        keys = [(f.kind, k) for k in (f.signature, *f.aliases)]
        if into is not None:
            self._join(into, ranks, line_no, text, f, log_t, wall_s, continued=True)
            self._register(keys, into)
            return into
        if f.kind == "crash":
            for inc in reversed(self.incidents[-64:]):
                if inc.severity == "error" and self._near(inc, log_t, wall_s, CONSEQUENCE_S):
                    if inc.kind == "crash":
                        self._join(inc, ranks, line_no, text, f, log_t, wall_s)
                        return inc
                    return None  # a consequence of that error: folded away
        if f.incomplete:
            # a traceback cut short (its lines went to another rank's record, or were
            # lost) is most likely the failure the other ranks printed at the same time
            for inc in reversed(self.incidents[-64:]):
                if inc.has_traceback and inc.severity == "error" and self._near(inc, log_t, wall_s, self.window_s):
                    self._join(inc, ranks, line_no, text, f, log_t, wall_s)
                    return inc
        window = KV_PRESSURE_WINDOW_S if f.kind == "kv_pressure" else self.window_s
        for key in keys:
            inc = self._by_sig.get(key)
            if inc is not None and self._near(inc, log_t, wall_s, window):
                self._join(inc, ranks, line_no, text, f, log_t, wall_s)
                self._register(keys, inc)
                return inc
        inc = Incident(
            alert_id=next(_alert_ids), kind=f.kind, severity=f.severity, signature=f.signature,
            message=f.message, first_line=line_no, traceback=text[:MAX_TRACEBACK_CHARS],
            has_traceback=f.has_traceback, last_log_t=log_t, last_wall_s=wall_s, ranks=ranks,
        )
        self._register(keys, inc)
        if len(self.incidents) < MAX_INCIDENTS:
            self.incidents.append(inc)
        self._publish(inc.to_alert())
        return inc

    def _register(self, keys: list[tuple[str, str]], inc: Incident) -> None:
        for key in keys:
            self._by_sig[key] = inc

    def _join(self, inc: Incident, ranks: list[int], line_no: int, text: str, f: Finding,
              log_t: float | None, wall_s: float, continued: bool = False) -> None:
        changed = False
        if line_no < inc.first_line:  # a record finished late (a traceback cut short)
            inc.first_line = line_no
            changed = True
        inc.last_wall_s = wall_s
        if log_t is not None:
            inc.last_log_t = log_t
        new = [r for r in ranks if r not in inc.ranks]
        if new:
            inc.ranks.extend(new)
            changed = True
        if f.severity == "error" and inc.severity != "error":
            inc.severity = "error"  # e.g. failed health checks, then the watchdog fires
            inc.message = f.message
            changed = True
        if continued:
            # the rest of a traceback: its last exception is the one to show
            if PRIORITY.index(f.kind) < PRIORITY.index(inc.kind):
                inc.kind = f.kind
                changed = True
            if f.message != inc.message:
                inc.message = f.message
                inc.has_traceback = inc.has_traceback or f.has_traceback
                inc.traceback = (inc.traceback + "\n" + text)[:MAX_TRACEBACK_CHARS]
                changed = True
        elif f.has_traceback and not inc.has_traceback:
            # e.g. "Prefill out of memory" logged first, its traceback right after
            inc.has_traceback = True
            inc.traceback = text[:MAX_TRACEBACK_CHARS]
            inc.message = f.message
            changed = True
        if changed:
            self._publish(inc.to_alert())
