"""What became of one benchmark request: the one place that says so.

Every reader (the loop's runs and points, the ledger, the dashboard's error counts, the
exporter) calls :func:`classify`; none decides "failed" on its own.

Outcomes:
  ok               a finished stream with at least one output token and no numerical fault
  refused          the server turned it away because its queue was full: HTTP 429, a 503 while
                   it was serving others of ours, or SGLang's in-stream abort "The request
                   queue is full." (--max-queued-requests; 0.5.x aborts with status 503)
  http_error       any other non-200 answer
  aborted          the server ended the stream with an error or an abort of its own
  timeout          no first token within the first-token limit (or the HTTP client's timeout)
  stalled          output started, then stopped for longer than the stall limit
  connection_lost  could not connect, or the connection closed mid-response
  empty            the stream finished with no output token
  invalid          output that cannot be measured: NaN finish, malformed chunks, no token count
  cancelled        cut off by tuiapp's own stop: not a request of the measurement

Only ``ok`` counts as served; ``cancelled`` is not counted at all; every other outcome is a
failed request of its own reason, in every rate, share and verdict.

Per-request timing names (bench/client.py computes them; one name each, everywhere):
  TTFT  = first output chunk - request sent (open loop: - its scheduled send time)
  TPOT  = (e2e - TTFT) / (N - 1), N the server's completion token count (vLLM's TPOT;
          AIPerf calls it inter-token latency)
  ITL   = a gap between consecutive output chunks (vLLM's ITL); a request's is the mean of
          its gaps (``chunk_gap_mean_s``). With one token a chunk ITL equals TPOT; with
          speculative decoding it is TPOT x tokens per chunk.
  decode tok/s (per stream) = (N - 1) / (e2e - TTFT)
"""

from __future__ import annotations

from typing import Literal, Protocol


class RequestResult(Protocol):
    """What :func:`classify` reads of a finished request (tuiapp.bench.client.RequestResult)."""

    ok: bool
    cancelled: bool
    refused: bool
    numerical_fault: bool
    completion_tokens: int | None
    http_status: int | None
    connect_failed: bool
    error: str | None

Outcome = Literal["ok", "refused", "http_error", "aborted", "timeout", "stalled", "connection_lost",
                  "empty", "invalid", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "refused", "http_error", "aborted", "timeout", "stalled",
                                 "connection_lost", "empty", "invalid", "cancelled")
FAILURES: tuple[Outcome, ...] = tuple(o for o in OUTCOMES if o not in ("ok", "cancelled"))

QUEUE_FULL_STATUSES = (429, 503)
# SGLang's scheduler (--max-queued-requests): "The request queue is full."; vLLM, TGI and
# gateways say "overloaded", "too many requests" or "queue full" in some form
_QUEUE_WORDS = ("queue is full", "queue full", "too many requests", "overloaded", "server busy",
                "rate limit")


def says_queue_full(text: str | None) -> bool:
    low = (text or "").lower()
    return any(word in low for word in _QUEUE_WORDS)


def classify(r: RequestResult) -> Outcome:
    """The outcome of one finished request (see the module's table)."""
    if r.cancelled:
        return "cancelled"
    if r.ok:
        if r.numerical_fault:
            return "invalid"
        if not r.completion_tokens:
            return "empty"
        return "ok"
    error = r.error or ""
    if r.refused or r.http_status == 429 or (r.http_status in QUEUE_FULL_STATUSES and says_queue_full(error)):
        return "refused"
    if r.http_status is not None and r.http_status != 200:
        return "http_error"
    if error.startswith(("aborted", "server error", "stream ended before")):
        return "refused" if says_queue_full(error) else "aborted"
    if error.startswith("timeout: stream stalled"):
        return "stalled"
    if error.startswith("timeout"):
        return "timeout"
    if r.connect_failed or error.startswith(("connection closed", "cannot connect")):
        return "connection_lost"
    if error in ("stream ended without output", "no output in stream"):
        return "empty"
    return "invalid"


def is_failure(outcome: Outcome) -> bool:
    return outcome in FAILURES


def reason_text(r: RequestResult, outcome: Outcome) -> str:
    """The words of a failed request: the client's error, or what a finished stream lacked."""
    if r.error:
        return r.error
    if outcome == "invalid" and r.numerical_fault:
        return "finished with 'NaN happened'"
    if outcome == "empty":
        return "finished with no output token"
    return outcome
