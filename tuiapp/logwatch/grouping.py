"""Findings -> Alert events, one per incident.

The same failure (kind + normalised message) from more ranks within the group window is
one incident: it is re-published with the same ``alert_id`` and the grown rank list, and
consumers replace by id. Closeness is judged on log timestamps when both records have
one (so a finished log groups the way it did live) and on arrival time otherwise. ``count``
says how many records reported an incident: per-request failures (a KV transfer, an HTTP
500) are one warning whose count grows within REPEAT_WINDOW_S, not one alert per request.

The death of the server (sigquit, ``crashed with exit code``, ``scheduler is dead``,
``terminate called``, ``Killed``) is always an incident of its own, kind ``crash``: a
post-mortem must tell a server that survived an error (decode OOMs retract and go on) from
one that died of it. Its ``caused_by`` is the error incident that preceded it within
CONSEQUENCE_S, or one that opens within CAUSE_AFTER_S after it (the parent's sigquit line
often reaches the log before the child's traceback). Death lines within CONSEQUENCE_S of
a crash incident join it; the line that says most about the death (an exit code) is shown.
After an orderly shutdown (``SIGTERM received``) the children's exits and the SIGQUIT that
follows are the shutdown, not a death: they raise nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from tuiapp.events import Alert
from tuiapp.logwatch.classify import Finding
from tuiapp.logwatch.families import PRIORITY

CONSEQUENCE_S = 30.0
CAUSE_AFTER_S = 2.0
SHUTDOWN_S = 300.0  # a drain waits for running requests; the exits after it are the shutdown
KV_PRESSURE_WINDOW_S = 60.0  # retractions come in episodes; one alert per episode
# Failures that repeat for as long as their cause lasts (a request's KV transfer, an HTTP 500,
# NaN logits, a kernel Xid): one incident per episode whose count grows, not one per request.
REPEAT_WINDOW_S = {"kv_pressure": KV_PRESSURE_WINDOW_S, "transfer": 60.0, "request": 60.0, "numerical": 60.0,
                   "xid": 60.0}
KNOCK_ON_REQUEST_S = 1.0  # a 500 answered within this of a failure was answered for it
KNOCK_ON_REQUEST_LINES = 40
GENERIC_BURST_LINES = 8  # generic records this close (in lines) continue the same incident
MAX_TRACEBACK_CHARS = 64 * 1024
MAX_INCIDENTS = 10_000
MAX_JOINED = 16  # knock-ons and follow-ups an incident lists (a burst of 500s is one line of it each)

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
    signature_line: int = 0  # the line the message came from
    caused_by: int | None = None  # alert_id of the error a crash followed
    specific: int = 1
    first_log_t: float | None = None
    first_wall_s: float = 0.0
    last_line: int = 0  # where its latest record started
    generic: bool = False  # opened by the generic layer (no family knows it)
    count: int = 1  # records that reported it (each rank's, each failed request's)
    joined: list[tuple[int, str]] = field(default_factory=list)  # (line, message): knock-ons, a burst
    repeats: list[int] = field(default_factory=list)  # decisive lines of the records counted after the first

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
            signature_line=self.signature_line,
            caused_by=self.caused_by,
            count=self.count,
            joined=list(self.joined),
            repeats=list(self.repeats),
        )


class AlertGrouper:
    def __init__(self, publish: Callable[[Alert], None], window_s: float) -> None:
        self._publish = publish
        self.window_s = window_s
        self.incidents: list[Incident] = []
        self._by_sig: dict[tuple[str, str], Incident] = {}
        self._shutdown: tuple[float | None, float] | None = None  # (log_t, wall) of SIGTERM

    @staticmethod
    def _near(inc: Incident, log_t: float | None, wall_s: float, window_s: float) -> bool:
        if log_t is not None and inc.last_log_t is not None:
            return abs(log_t - inc.last_log_t) <= window_s
        return abs(wall_s - inc.last_wall_s) <= window_s

    def note_shutdown(self, log_t: float | None, wall_s: float) -> None:
        """An orderly shutdown began (``SIGTERM received ... Draining requests``)."""
        self._shutdown = (log_t, wall_s)

    def _shutting_down(self, log_t: float | None, wall_s: float) -> bool:
        if self._shutdown is None:
            return False
        s_log, s_wall = self._shutdown
        if log_t is not None and s_log is not None:
            return 0.0 <= log_t - s_log <= SHUTDOWN_S
        return 0.0 <= wall_s - s_wall <= SHUTDOWN_S

    def add(self, f: Finding, ranks: list[int], line_no: int, text: str,
            log_t: float | None, wall_s: float, into: Incident | None = None,
            sig_line: int | None = None) -> Incident | None:
        """The incident the finding joined or opened (None: part of an orderly shutdown).
        ``into``: the incident of the record this one continues (a traceback that arrived
        in pieces): the finding joins it whatever its wording. ``sig_line``: the line the
        message came from (default: that line's offset in the record)."""
        ranks = sorted(set(ranks))
        if sig_line is None:
            sig_line = line_no + f.line_index
        keys = [(f.kind, k) for k in (f.signature, *f.aliases)]
        if into is not None:
            self._join(into, ranks, line_no, sig_line, text, f, log_t, wall_s, continued=True)
            self._register(keys, into)
            return into
        if f.knock_on:
            target = self._cause_of(f, log_t, wall_s, line_no)
            if target is not None:
                self._join(target, ranks, line_no, sig_line, text, f, log_t, wall_s, counted=False)
                return target
        if f.generic:
            # a traceback logged line by line at ERROR level, an error and its follow-ups:
            # consecutive generic records are one incident
            last = self.incidents[-1] if self.incidents else None
            if (last is not None and last.generic and abs(line_no - last.last_line) <= GENERIC_BURST_LINES
                    and (log_t is None or last.last_log_t is None or abs(log_t - last.last_log_t) <= self.window_s)):
                self._join(last, ranks, line_no, sig_line, text, f, log_t, wall_s, counted=False)
                return last
        if f.kind == "crash":
            return self._add_crash(f, ranks, line_no, sig_line, text, log_t, wall_s)
        if f.incomplete:
            # a traceback cut short (its lines went to another rank's record, or were
            # lost) is most likely the failure the other ranks printed at the same time;
            # the main process's own traceback after a death is that death's
            target = self._latest(lambda i: i.kind != "crash" and i.severity == "error", log_t, wall_s,
                                  self.window_s)
            if target is None and not ranks:
                target = self._latest(lambda i: i.kind == "crash", log_t, wall_s, self.window_s)
            if target is not None:
                self._join(target, ranks, line_no, sig_line, text, f, log_t, wall_s)
                return target
        window = REPEAT_WINDOW_S.get(f.kind, self.window_s)
        for key in keys:
            inc = self._by_sig.get(key)
            if inc is not None and self._near(inc, log_t, wall_s, window):
                self._join(inc, ranks, line_no, sig_line, text, f, log_t, wall_s)
                self._register(keys, inc)
                return inc
        inc = self._open(f, ranks, line_no, sig_line, text, log_t, wall_s)
        self._register(keys, inc)
        if f.severity == "error":
            self._adopt(inc)
        return inc

    def _cause_of(self, f: Finding, log_t: float | None, wall_s: float, line_no: int) -> Incident | None:
        """The open incident a knock-on belongs to: the collective burst a c10 line follows,
        the failure a 500 was answered for in the same second, the death (or error) a
        launcher's or web server's traceback came after."""
        if f.knock_on == "death":
            return self._latest(lambda i: i.kind == "crash", log_t, wall_s, CONSEQUENCE_S)
        if f.kind == "nccl":
            return self._latest(lambda i: i.kind == "nccl", log_t, wall_s, self.window_s)
        if f.kind == "request":
            # an access-log line has no time of its own: read at once (logscan) every line
            # arrives together, so closeness in the log stands in for the same second
            return self._latest(lambda i: i.severity == "error" and (
                log_t is not None or abs(line_no - i.signature_line) <= KNOCK_ON_REQUEST_LINES),
                log_t, wall_s, KNOCK_ON_REQUEST_S)
        return self._latest(lambda i: i.severity == "error", log_t, wall_s, CONSEQUENCE_S)

    def _open(self, f: Finding, ranks: list[int], line_no: int, sig_line: int, text: str,
              log_t: float | None, wall_s: float, caused_by: int | None = None) -> Incident:
        inc = Incident(
            alert_id=next(_alert_ids), kind=f.kind, severity=f.severity, signature=f.signature,
            message=f.message, first_line=line_no, traceback=text[:MAX_TRACEBACK_CHARS],
            has_traceback=f.has_traceback, last_log_t=log_t, last_wall_s=wall_s, ranks=ranks,
            signature_line=sig_line, caused_by=caused_by, specific=f.specific,
            first_log_t=log_t, first_wall_s=wall_s, last_line=line_no, generic=f.generic,
        )
        if len(self.incidents) < MAX_INCIDENTS:
            self.incidents.append(inc)
        self._publish(inc.to_alert())
        return inc

    def _latest(self, pred: Callable[[Incident], bool], log_t: float | None, wall_s: float,
                window_s: float) -> Incident | None:
        for inc in reversed(self.incidents[-64:]):
            if pred(inc) and self._near(inc, log_t, wall_s, window_s):
                return inc
        return None

    def _add_crash(self, f: Finding, ranks: list[int], line_no: int, sig_line: int, text: str,
                   log_t: float | None, wall_s: float) -> Incident | None:
        if self._shutting_down(log_t, wall_s):
            return None
        inc = self._latest(lambda i: i.kind == "crash", log_t, wall_s, CONSEQUENCE_S)
        if inc is not None:
            changed = False
            new = [r for r in ranks if r not in inc.ranks]
            if new:
                inc.ranks.extend(new)
                changed = True
            if f.message.startswith("Exit code:"):
                if "exit code" not in inc.message.lower():
                    inc.message = f"{inc.message} {f.message}"
                    changed = True
            elif f.specific > inc.specific:
                inc.message, inc.signature_line, inc.specific = f.message, sig_line, f.specific
                changed = True
            if line_no < inc.first_line:
                inc.first_line = line_no
                changed = True
            inc.last_wall_s = wall_s
            if log_t is not None:
                inc.last_log_t = log_t
            if changed:
                self._publish(inc.to_alert())
            return inc
        cause = self._latest(lambda i: i.kind != "crash" and i.severity == "error", log_t, wall_s,
                             CONSEQUENCE_S)
        return self._open(f, ranks, line_no, sig_line, text, log_t, wall_s,
                          caused_by=cause.alert_id if cause is not None else None)

    def _adopt(self, err: Incident) -> None:
        """A death logged just before the error that caused it takes that error as its cause."""
        for inc in reversed(self.incidents[-64:-1]):
            if inc.kind != "crash" or inc.caused_by is not None:
                continue
            if err.first_log_t is not None and inc.first_log_t is not None:
                ok = 0.0 <= err.first_log_t - inc.first_log_t <= CAUSE_AFTER_S
            else:
                ok = 0.0 <= err.first_wall_s - inc.first_wall_s <= CAUSE_AFTER_S
            if ok:
                inc.caused_by = err.alert_id
                self._publish(inc.to_alert())
            break

    def _register(self, keys: list[tuple[str, str]], inc: Incident) -> None:
        for key in keys:
            self._by_sig[key] = inc

    def _join(self, inc: Incident, ranks: list[int], line_no: int, sig_line: int, text: str, f: Finding,
              log_t: float | None, wall_s: float, continued: bool = False, counted: bool = True) -> None:
        changed = False
        inc.last_line = max(inc.last_line, line_no)
        if not continued and counted:
            inc.count += 1
            if sig_line != inc.signature_line and sig_line not in inc.repeats and len(inc.repeats) < MAX_JOINED:
                inc.repeats.append(sig_line)  # where each copy is (another rank's traceback, the next 500)
            changed = True
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
        if (not counted or f.incomplete) and not continued and f.message != inc.message \
                and len(inc.joined) < MAX_JOINED and all(m != f.message for _, m in inc.joined):
            # a knock-on, the next line of a burst, a traceback cut short that joined the failure it
            # most likely is: listed, so a 500 answered for a death is told, not lost
            inc.joined.append((sig_line, f.message))
            changed = True
        if not counted:
            pass  # the incident keeps its own message
        elif not continued and f.kind == inc.kind and f.specific > inc.specific:
            # a later line of the same burst says more (NVSHMEM's summary after its source lines)
            inc.message, inc.signature_line, inc.specific = f.message, sig_line, f.specific
            changed = True
        if counted and f.severity == "error" and inc.severity != "error":
            inc.severity = "error"  # e.g. failed health checks, then the watchdog fires
            inc.message, inc.signature_line = f.message, sig_line
            changed = True
        if continued:
            # the rest of a traceback: its last exception is the one to show
            if PRIORITY.index(f.kind) < PRIORITY.index(inc.kind):
                inc.kind = f.kind
                changed = True
            if f.message != inc.message:
                inc.message, inc.signature_line = f.message, sig_line
                inc.has_traceback = inc.has_traceback or f.has_traceback
                inc.traceback = (inc.traceback + "\n" + text)[:MAX_TRACEBACK_CHARS]
                changed = True
        elif counted and f.has_traceback and not inc.has_traceback:
            # e.g. "Prefill out of memory" logged first, its traceback right after
            inc.has_traceback = True
            inc.traceback = text[:MAX_TRACEBACK_CHARS]
            if f.message != inc.message:
                inc.message, inc.signature_line = f.message, sig_line
            changed = True
        if changed:
            self._publish(inc.to_alert())
