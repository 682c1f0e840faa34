"""Server states, in one place for attach and launch (docs/attach.md "Server states").

- **starting**: the connection is refused, or the server answers 503, or a 200 whose body
  says it is starting: wait, with a progress line, bounded by ``--ready-timeout``;
- **ready**: neither ``/health`` nor ``/v1/models`` says it is starting (a server without
  ``/health`` is ready when ``/v1/models`` answers);
- **unreachable** after it was serving: one incident at once (a ``crash`` alert when the
  connection is refused, with the last lines of the followed log), the header's state is
  ``unreachable``; a headless job gives up after ``--server-wait-s`` with exit 1;
- **back**: the loop resumes; the incident is updated with the length of the gap, the
  header says ``running`` again and a note marks the gap in the recording and the report.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import Any

import httpx

from tuiapp.events import Alert, LogLine, Note, ServerState

STARTING_WORDS = ("starting", "loading", "initializing", "warming up")
PROGRESS_EVERY_S = 5.0  # a progress line while waiting for a starting server
READY_POLL_S = 0.5
LOG_TAIL_LINES = 10  # the followed log's last lines an unreachable incident carries
UNREACHABLE_ALERT_ID = 4_100_000  # + the outage's number: each outage is one incident


def starting_reason(status: int, body: str) -> str | None:
    """Why an answer means "not serving yet", in a few words; None when it serves (or fails
    for some other reason, which is not for the readiness wait to judge)."""
    said = " ".join(body.split())[:120]
    if status == 503:
        return f"HTTP 503{': ' + said if said else ''}"
    if status == 200 and any(w in said.lower() for w in STARTING_WORDS) and len(said) < 120:
        return f"says {said!r}"
    return None


def _refused(exc: BaseException) -> bool:
    """A connection refused (nothing listens yet), not a name, TLS or proxy failure."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 8:
        if isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower():
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


async def readiness(client: httpx.AsyncClient, base_url: str, timeout_s: Any = 5.0) -> str | None:
    """None when the server at ``base_url`` serves, else why it does not yet (refused, 503,
    "starting"). Errors that waiting cannot cure (TLS, name resolution, a server that accepts
    and never answers: ``httpx.TimeoutException``) are raised."""
    try:
        resp = await client.get(base_url + "/health", timeout=timeout_s)
    except httpx.ConnectError as exc:
        if _refused(exc):
            return "Connection refused"
        raise
    except httpx.RemoteProtocolError:
        return "connection closed before an answer"
    why = starting_reason(resp.status_code, resp.text)
    if why is not None:
        return f"GET /health: {why}"
    health_up = resp.status_code == 200
    # /health up, absent (404) or failing: /v1/models says whether the model is served yet
    # (a server may answer /health while its model still loads: 503 "Server is starting";
    # with /health up, only a model list that says so holds it back)
    resp = await client.get(base_url + "/v1/models", timeout=timeout_s)
    why = starting_reason(resp.status_code, resp.text)
    if why is not None and health_up and not any(w in why.lower() for w in STARTING_WORDS):
        return None
    return why and f"GET /v1/models: {why}"


class NotReady(Exception):
    """The server was not ready within the readiness timeout (one line)."""


async def wait_until_ready(client: httpx.AsyncClient, base_url: str, *, timeout_s: float,
                           progress: Callable[[str], None], poll_s: float = READY_POLL_S,
                           request_timeout_s: float = 5.0) -> float:
    """Wait while the server is starting; the seconds waited. A progress line at the start,
    whenever the answer changes (refused -> 503) and every ``PROGRESS_EVERY_S`` while it
    waits; :class:`NotReady` after ``timeout_s``."""
    t0 = time.monotonic()
    next_line_s = 0.0
    said = ""
    while True:
        why = await readiness(client, base_url, request_timeout_s)
        waited_s = time.monotonic() - t0
        if why is None:
            if waited_s >= poll_s:
                progress(f"{base_url} is ready after {waited_s:.1f} s")
            return waited_s
        if waited_s >= timeout_s:
            raise NotReady(f"{base_url} not ready after {timeout_s:g} s (--ready-timeout): {why}")
        if waited_s >= next_line_s or why.split(":")[0] != said:  # and at once when the answer changes
            progress(f"waiting for {base_url} to be ready: {why} ({waited_s:.0f} s of {timeout_s:g} s)")
            next_line_s, said = waited_s + PROGRESS_EVERY_S, why.split(":")[0]
        await asyncio.sleep(min(poll_s, max(0.0, timeout_s - waited_s)))


class ServerWatch:
    """The serving -> unreachable -> back cycle of a server the benchmark loop talks to.

    The loop calls :meth:`lost` when a request cannot connect (or the server stops serving),
    :meth:`back` when it answers again, and asks :meth:`gave_up` while it waits; ``wait_s``
    None waits for ever (the dashboard: the user decides). ``tap`` wraps the publish given to
    log sources so the incident can carry the log's last lines.
    """

    def __init__(self, publish: Callable[[Any], None], url: str, *, wait_s: float | None = None,
                 source: str = "bench") -> None:
        self._publish = publish
        self.url = url
        self.wait_s = wait_s
        self._source = source
        self._log_tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
        self._since: float | None = None
        self._why = ""
        self.outages = 0
        self.lost_s = 0.0  # the outages' total, for the summary
        self.gave_up_reason: str | None = None
        self._alert: Alert | None = None

    # ------------------------------------------------------------ inputs

    def tap(self, publish: Callable[[Any], None]) -> Callable[[Any], None]:
        tail = self._log_tail

        def tapped(event: Any) -> None:
            if isinstance(event, LogLine):
                tail.extend(event.text.splitlines()[-LOG_TAIL_LINES:])
            publish(event)

        return tapped

    @property
    def unreachable(self) -> bool:
        return self._since is not None

    def lost(self, why: str, *, refused: bool = True) -> None:
        """The first failed connection (or 503) after serving: the incident, at once."""
        if self._since is not None:
            return
        self._since = time.monotonic()
        self._why = why
        self.outages += 1
        what = "refuses connections" if refused else "stopped serving"
        self._alert = Alert(
            alert_kind="crash" if refused else "error", severity="error", source=self._source,
            alert_id=UNREACHABLE_ALERT_ID + self.outages,
            message=f"server unreachable: {self.url} {what} ({why})",
            traceback="\n".join(self._log_tail),
        )
        self._publish(ServerState(state="unreachable", url=self.url, message=why))
        self._publish(self._alert)

    def remaining_s(self) -> float | None:
        if self.wait_s is None or self._since is None:
            return None
        return max(0.0, self._since + self.wait_s - time.monotonic())

    def gave_up(self) -> bool:
        """True (once the reason is set) when the server stayed unreachable for ``wait_s``."""
        remaining = self.remaining_s()
        if remaining is None or remaining > 0:
            return False
        if self.gave_up_reason is None:
            self.gave_up_reason = (f"server unreachable for {self.wait_s:g} s (--server-wait-s): {self._why}")
            self._publish(Note(level="error", text=self.gave_up_reason + "; giving up", source=self._source))
        return True

    def back(self) -> None:
        """The server answers again: the gap is marked and the incident closed."""
        if self._since is None:
            return
        gap_s = time.monotonic() - self._since
        self.lost_s += gap_s
        self._since = None
        text = f"server back after {gap_s:.1f} s unreachable ({self._why}); benchmark resumed"
        if self._alert is not None:
            self._publish(self._alert.model_copy(update={
                "severity": "warning", "message": f"{self._alert.message}; back after {gap_s:.1f} s"}))
        self._publish(ServerState(state="running", url=self.url, message=f"back after {gap_s:.1f} s"))
        self._publish(Note(level="warning", text=text, source=self._source))
