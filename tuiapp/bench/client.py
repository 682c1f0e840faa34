"""One streamed request, measured: SGLang's /generate or the OpenAI endpoints.

Cost matters (one client core must carry >= 20,000 tokens/s): the body is read raw (no
decoding layers), SSE lines are split with bytes.find, and native /generate chunks -
which repeat the whole text so far - are not JSON-decoded at all except the last one;
the token count of a chunk is read with one reverse byte search. A quote inside a JSON
string is always escaped, so ``"completion_tokens":`` can only match the real key.

Per request (N = the server's completion token count; the names are defined once, in
tuiapp/common/outcome.py, with what became of the request):
  TTFT  = first chunk carrying output - request sent
  TPOT  = (e2e - TTFT) / (N - 1)            (per token, not per chunk)
  decode tok/s = (N - 1) / (e2e - TTFT)
  ITL   = gap between consecutive output chunks; chunk_gap_mean_s is a request's mean
  tokens per chunk = tokens after the first chunk / chunks after the first
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from tuiapp.bench.http_client import open_post
from tuiapp.bench.settings import NO_MODEL, ApiName, BenchSettings, Timeouts
from tuiapp.bench.workload import Prompt
from tuiapp.common import acceptance
from tuiapp.common.lean_transport import STREAM_WAKE_S, take_back_cancel

NAN_MATCH = "NaN happened"
STREAM_CUT = "stream ended before the request finished"
_CT_KEY = b'"completion_tokens":'
_INT = re.compile(rb"\s*(\d+)")

PATHS: dict[str, str] = {
    "generate": "/generate",
    "completions": "/v1/completions",
    "chat": "/v1/chat/completions",
}


@dataclass(slots=True)
class RequestResult:
    ok: bool = False
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    chunks: int = 0  # chunks that carried output
    first_chunk_tokens: int | None = None
    gap_sum_s: float = 0.0  # sum of gaps between output chunks after the first
    accept_length: float | None = None
    accept_rate: float | None = None
    spec_verify_ct: int | None = None
    spec_accept_histogram: list[int] | None = None  # tuiapp.common.acceptance
    spec_cap_histogram: list[int] | None = None
    finish_reason: str | None = None
    numerical_fault: bool = False
    http_status: int | None = None
    connect_failed: bool = False  # the server could not be reached at all
    error_body: str | None = None  # a refusal's body, to find the field it names
    tokens_from_chunks: bool = False  # no usage in the stream: one output chunk counted as one token
    cancelled: bool = False  # cut off by our own stop: not a failure
    refused: bool = False  # a 503 while others of ours were served: the server's queue was full
    lag_s: float = 0.0  # open loop: sent this long after its scheduled time (in TTFT and e2e)

    @property
    def tpot_s(self) -> float | None:
        n, ttft, e2e = self.completion_tokens, self.ttft_s, self.e2e_s
        if n is None or n < 2 or ttft is None or e2e is None:
            return None
        return (e2e - ttft) / (n - 1)

    @property
    def decode_tok_s(self) -> float | None:
        n, ttft, e2e = self.completion_tokens, self.ttft_s, self.e2e_s
        if n is None or n < 2 or ttft is None or e2e is None or e2e <= ttft:
            return None
        return (n - 1) / (e2e - ttft)

    @property
    def chunk_gap_mean_s(self) -> float | None:
        return self.gap_sum_s / (self.chunks - 1) if self.chunks > 1 else None

    @property
    def tokens_per_chunk(self) -> float | None:
        n = self.completion_tokens
        if n is None or self.chunks < 2:
            return None
        return (n - (self.first_chunk_tokens or 1)) / (self.chunks - 1)


# Fields a server may refuse (HTTP 400/422 naming one): the loop drops it and goes on.
OPTIONAL_FIELDS = ("ignore_eos", "return_spec_tokens_details", "stream_options", "temperature")


def build_payload(api: ApiName, prompt: Prompt, settings: BenchSettings, model: str | None,
                  omit: frozenset[str] = frozenset()) -> bytes:
    """``omit``: optional fields this server refused."""
    max_new = prompt.max_new_tokens or settings.max_new_tokens
    if api == "generate":
        sampling: dict[str, Any] = {
            "temperature": settings.temperature,
            "max_new_tokens": max_new,
            "ignore_eos": settings.ignore_eos,
        }
        body: dict[str, Any] = {
            "sampling_params": {k: v for k, v in sampling.items() if k not in omit},
            "stream": True,
        }
        if prompt.input_ids is not None:
            body["input_ids"] = list(prompt.input_ids)
        else:
            body["text"] = prompt.as_text()
        return orjson.dumps(body)
    body = {
        "model": model or "default",  # NO_MODEL (""): the server serves its one model, unnamed
        "max_tokens": max_new,
        "temperature": settings.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if settings.sglang_extensions:
        if settings.ignore_eos:
            body["ignore_eos"] = True
        if settings.spec_details:
            body["return_spec_tokens_details"] = True
    for name in omit:
        body.pop(name, None)
    if model == NO_MODEL:
        del body["model"]
    if api == "chat":
        body["messages"] = prompt.as_messages()
    elif prompt.input_ids is not None:
        body["prompt"] = list(prompt.input_ids)
    else:
        body["prompt"] = prompt.as_text()
    return orjson.dumps(body)


class _Spacing:
    """How far apart to read the stream (the lean transport's spaced reads): at once before
    the first token, so TTFT is exact; then every ``STREAM_WAKE_S``; and once the end is due
    within one spacing, one read aimed at it, and every byte at once after that, so the end is
    seen when it comes and the next request is not held back. Arrival stamps keep every time
    exact whatever the spacing: only the number of wake-ups changes."""

    __slots__ = ("_wake", "_expect", "_mode", "_aimed_at", "_pace_tokens", "_pace_s", "tokens", "first_tokens",
                 "first_s")

    def __init__(self, resp: httpx.Response, expect_tokens: int | None) -> None:
        self._wake = resp.extensions.get("stream_wake")
        self._expect = expect_tokens
        self._mode: float | None = -1.0
        self._aimed_at: float | None = None  # the stamp of the piece the aimed read was set from
        # the pace is measured from the second piece on: the gap after the first token is
        # inflated whenever other requests' prefills share the step (any batch), and a pace
        # read from it aims the end too late - the end unseen for up to a spacing holds back
        # the next request (closed loop at 4 streams of 32 tokens lost ~20% of its rate)
        self._pace_tokens = 0
        self._pace_s = 0.0
        # the reader keeps these up to date, line by line
        self.tokens = 0
        self.first_tokens = 0
        self.first_s = 0.0
        self.piece(0.0)

    def piece(self, now_s: float) -> None:
        """After each piece (one read), all its lines taken; ``now_s`` is its arrival stamp,
        the newest byte's: only the piece's last line is as new as its stamp."""
        if self._wake is None:
            return
        tokens = self.tokens
        mode: float | None = None  # the transport's spacing
        left = self._expect - tokens if self._expect else None
        if left is not None and tokens > self.first_tokens and not self._pace_tokens:
            self._pace_tokens, self._pace_s = tokens, now_s
        if tokens == 0 or (left is not None and left > 0 and (not self._pace_tokens or tokens <= self._pace_tokens)):
            # before the first token, and until a piece after the second gives the pace
            mode = 0.0
        elif self._aimed_at is not None:
            # the aimed read has come and the stream goes on: every byte at once
            mode = 0.0
        elif left is not None and left <= 0:
            mode = 0.0
        elif left is not None and tokens > self._pace_tokens:
            per_token_s = (now_s - self._pace_s) / (tokens - self._pace_tokens)
            due_s = left * per_token_s
            if due_s < STREAM_WAKE_S:
                # a token and a half early: then the last ones are read as they come
                mode = max(due_s - 1.5 * per_token_s, 0.001)
                self._aimed_at = now_s
        if mode != self._mode:
            self._mode = mode
            self._wake(mode)


class _Progress:
    """What the watchdog looks at: has output started, when did the stream last move."""

    __slots__ = ("started", "last_s")

    def __init__(self, now_s: float) -> None:
        self.started = False
        self.last_s = now_s


async def stream_request(
    client: httpx.AsyncClient, url: str, api: ApiName, payload: bytes, timeouts: Timeouts,
    expect_tokens: int | None = None,
) -> RequestResult:
    """Send one request and measure it. Never raises for a bad response or a timeout.
    ``expect_tokens``: the output length asked for (when the end is near the stream is read
    at once again; see _Spacing)."""
    res = RequestResult()
    t0 = time.perf_counter()
    progress = _Progress(t0)
    verdict = await _watched(_stream(client, url, api, payload, res, progress, t0, expect_tokens), progress,
                             timeouts)
    if verdict is not None:
        res.ok = False
        res.error = verdict
    elif not res.ok and res.error is None:
        res.error = "incomplete response: no token count or finish reason"
    return res


async def _watched(coro, progress: _Progress, timeouts: Timeouts) -> str | None:
    """Run the request in this task; cancel it past the first-token or stall limit (the
    reason is returned). A timer, not a task of its own with a waiter: a closed loop's burst
    of requests is sent as fast as the loop gets to them, and a task and a wait per request
    spread it (see bench/http_client.py)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    tick_s = min(timeouts.first_token_s, timeouts.stall_s) / 4
    reason: str | None = None
    handle: asyncio.TimerHandle | None = None

    def check() -> None:
        nonlocal handle, reason
        idle_s = time.perf_counter() - progress.last_s
        if not progress.started and idle_s > timeouts.first_token_s:
            reason = f"timeout: no first token after {timeouts.first_token_s:g} s"
        elif progress.started and idle_s > timeouts.stall_s:
            reason = f"timeout: stream stalled for {timeouts.stall_s:g} s"
        else:
            handle = loop.call_later(tick_s, check)
            return
        handle = None
        task.cancel()

    handle = loop.call_later(tick_s, check)
    try:
        await coro
    except asyncio.CancelledError:
        if reason is None:
            raise
        take_back_cancel(task)
    finally:
        if handle is not None:
            handle.cancel()
    return reason


async def _stream(
    client: httpx.AsyncClient,
    url: str,
    api: ApiName,
    payload: bytes,
    res: RequestResult,
    progress: _Progress,
    t0: float,
    expect_tokens: int | None = None,
) -> None:
    try:
        resp, sent_s = await open_post(client, url, payload)
        try:
            res.http_status = resp.status_code
            if resp.status_code != 200:
                body = await resp.aread()
                res.error = f"HTTP {resp.status_code}: {_error_text(body)}"
                res.error_body = body[:4096].decode("utf-8", "replace")
                return
            if sent_s is None:  # httpx's own transport (https, a proxy): no send stamp
                sent_s = t0
            spacing = _Spacing(resp, expect_tokens)
            if api == "generate":
                await _read_generate(resp, res, progress, sent_s, spacing)
            else:
                await _read_openai(resp, res, progress, sent_s, spacing)
        finally:
            await resp.aclose()
    except httpx.ConnectError as exc:
        res.connect_failed = True
        res.error = f"cannot connect: {exc}" if str(exc) else "cannot connect"
    except httpx.RemoteProtocolError:
        res.error = "connection closed by the server mid-response"
    except httpx.TimeoutException as exc:
        res.error = f"timeout: {type(exc).__name__}"
    except httpx.HTTPError as exc:
        res.error = f"{type(exc).__name__}: {exc}"[:300]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        res.error = f"bad response: {type(exc).__name__}: {exc}"[:300]


def _error_text(body: bytes) -> str:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace").strip() or "(empty body)"
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("message", obj.get("detail", obj)))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:200]
    return str(obj)[:200]


DONE_GRACE_S = 0.25
_TIMEOUT_CM = getattr(asyncio, "timeout", None)  # Python 3.11+


async def _body_end(events) -> None:
    """After [DONE], the body's end before the next request goes, as a closed loop's peers
    (bench_serving's aiohttp, AIPerf) read a response to its end: re-sending at [DONE] let
    tuiapp's closed loop run ahead of them (+6% at 4 streams on the real CPU server) and drop
    the connection whenever the end was not in yet. Bounded, for a server that keeps the
    stream open after [DONE]: then the connection is closed, not reused."""
    async def drain() -> None:
        async for _ in events:
            pass

    try:
        if _TIMEOUT_CM is not None:
            # no task of its own: the end is usually in already and nothing waits at all
            async with _TIMEOUT_CM(DONE_GRACE_S):
                await drain()
        else:
            await asyncio.wait_for(drain(), DONE_GRACE_S)
    except (asyncio.TimeoutError, TimeoutError):
        pass


async def _sse_data(resp: httpx.Response, on_piece: Callable[[float], None] | None = None):
    """Yield (arrival time, payload bytes) of each ``data:`` line; ``on_piece(arrival)``
    once all lines of a read were taken (its last piece), before the next read is awaited."""
    buf = b""
    perf = time.perf_counter
    # the lean transport stamps its reads (it wakes us less often than data comes in)
    arrived = resp.extensions.get("arrived_s", perf)
    read_done = resp.extensions.get("read_done", lambda: True)
    own_pieces = resp.extensions.get("raw_pieces")  # the lean transport's: closed with us
    pieces = own_pieces() if own_pieces is not None else resp.aiter_raw()
    async with contextlib.aclosing(pieces):
        async for raw in pieces:
            now = arrived()
            buf = buf + raw if buf else raw
            start = 0
            while True:
                end = buf.find(b"\n", start)
                if end < 0:
                    break
                line = buf[start:end]
                start = end + 1
                if line[:5] == b"data:":
                    data = line[5:].strip()
                    if data:  # an empty data line is a keep-alive, not an event
                        yield now, data
            buf = buf[start:]
            if on_piece is not None and read_done():
                on_piece(now)
    if buf[:5] == b"data:" and buf[5:].strip():
        yield perf(), buf[5:].strip()


async def _read_generate(resp: httpx.Response, res: RequestResult, progress: _Progress, t0: float,
                         spacing: _Spacing) -> None:
    last_payload: bytes | None = None
    last_tokens = 0
    last_chunk_s = 0.0
    done = False
    async with contextlib.aclosing(_sse_data(resp, spacing.piece)) as events:
        async for now, data in events:
            progress.last_s = now
            if data == b"[DONE]":
                done = True
                await _body_end(events)
                break
            pos = data.rfind(_CT_KEY)
            if pos < 0:
                _generate_odd_chunk(data, res)
                return
            m = _INT.match(data, pos + len(_CT_KEY))
            tokens = int(m.group(1)) if m else last_tokens
            last_payload = data
            if tokens > last_tokens:
                if res.ttft_s is None:
                    res.ttft_s = now - t0
                    res.first_chunk_tokens = tokens
                    progress.started = True
                    spacing.first_tokens, spacing.first_s = tokens, now
                else:
                    res.gap_sum_s += now - last_chunk_s
                res.chunks += 1
                last_chunk_s = now
                last_tokens = tokens
                spacing.tokens = tokens
    if last_payload is None:
        res.error = "stream ended without output"
        return
    res.e2e_s = last_chunk_s - t0 if res.chunks else None
    final = orjson.loads(last_payload)
    _apply_meta(final.get("meta_info") if isinstance(final, dict) else None, res, last_tokens)
    if not done and res.finish_reason is None:
        res.ok = False
        res.error = res.error or "stream ended before the request finished"


def _generate_odd_chunk(data: bytes, res: RequestResult) -> None:
    """A chunk without a token count: an in-stream error, or not SGLang at all."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        res.error = f"malformed chunk: {data[:80].decode('utf-8', 'replace')}"
        return
    err = obj.get("error") if isinstance(obj, dict) else None
    if err is not None:
        msg = err.get("message", err) if isinstance(err, dict) else err
        res.error = f"server error: {str(msg)[:200]}"
    else:
        res.error = "chunk without meta_info.completion_tokens"


def _int(value: Any) -> int | None:
    """A count from the server, or None when it is missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:  # not NaN
        return float(value)
    return None


def _apply_meta(meta: Any, res: RequestResult, streamed_tokens: int) -> None:
    if not isinstance(meta, dict):
        res.error = "final chunk without meta_info"
        return
    res.completion_tokens = _int(meta.get("completion_tokens"))
    if res.completion_tokens is None and streamed_tokens:
        res.completion_tokens = streamed_tokens
    res.prompt_tokens = _int(meta.get("prompt_tokens"))
    finish = meta.get("finish_reason")
    if isinstance(finish, dict):
        kind = finish.get("type")
        res.finish_reason = str(kind) if kind is not None else "unknown"
        if kind == "stop" and finish.get("matched") == NAN_MATCH:
            res.numerical_fault = True
        if kind == "abort":
            res.error = f"aborted: {str(finish.get('message') or 'by server')[:200]}"
            return
    elif isinstance(finish, str):
        res.finish_reason = finish
    verify = _int(meta.get("spec_verify_ct"))
    if verify:
        res.spec_verify_ct = verify
        res.accept_length = _float(meta.get("spec_accept_length"))
        if res.accept_length is None and res.completion_tokens:
            res.accept_length = res.completion_tokens / verify  # older SGLang: only the count
        res.accept_rate = _float(meta.get("spec_accept_rate"))
        _apply_histograms(meta, res)
    res.ok = res.finish_reason is not None and res.error is None and res.completion_tokens is not None


async def _read_openai(resp: httpx.Response, res: RequestResult, progress: _Progress, t0: float,
                       spacing: _Spacing) -> None:
    last_chunk_s = 0.0
    loads = orjson.loads
    async with contextlib.aclosing(_sse_data(resp, spacing.piece)) as events:
        async for now, data in events:
            progress.last_s = now
            if data == b"[DONE]":
                await _body_end(events)
                break
            try:
                obj = loads(data)
            except orjson.JSONDecodeError:
                res.error = f"malformed chunk: {data[:80].decode('utf-8', 'replace')}"
                return
            if not isinstance(obj, dict):
                res.error = "malformed chunk: not an object"
                return
            if "error" in obj:
                err = obj["error"]
                msg = err.get("message", err) if isinstance(err, dict) else err
                res.error = f"server error: {str(msg)[:200]}"
                return
            choices = obj.get("choices")
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                text = (delta.get("content") or delta.get("reasoning_content")) if delta else choice.get("text")
                if text:
                    if res.ttft_s is None:
                        res.ttft_s = now - t0
                        progress.started = True
                        spacing.first_tokens, spacing.first_s = 1, now
                    else:
                        res.gap_sum_s += now - last_chunk_s
                    res.chunks += 1
                    last_chunk_s = now
                    spacing.tokens = res.chunks  # a chunk counted as a token (usage comes at the end, if at all)
                finish = choice.get("finish_reason")
                if finish:
                    res.finish_reason = str(finish)
                    if choice.get("matched_stop") == NAN_MATCH:
                        res.numerical_fault = True
            usage = obj.get("usage")
            if isinstance(usage, dict):
                res.completion_tokens = _int(usage.get("completion_tokens"))
                res.prompt_tokens = _int(usage.get("prompt_tokens"))
            ext = obj.get("sglext")
            if isinstance(ext, dict):
                _apply_spec_details(ext.get("spec_tokens_details"), res)
    res.e2e_s = last_chunk_s - t0 if res.chunks else None
    if res.accept_length is None and res.spec_verify_ct and res.completion_tokens:
        # sglext came before the usage chunk, without accept_length (older servers)
        res.accept_length = res.completion_tokens / res.spec_verify_ct
    if res.finish_reason == "abort":
        res.error = "aborted by server"
    elif res.finish_reason is None and res.completion_tokens is None:
        # no [DONE] is fine (transformers serve never sends it), and so is no finish reason
        # when usage came; neither means the stream was cut (llama-cpp-python ends one
        # with [DONE] alone, output or not, when the next request comes)
        res.error = STREAM_CUT
    elif not res.chunks:
        res.error = "no output in stream"
    elif res.completion_tokens is None:
        # no usage (stream_options refused or ignored): servers that stream one token per
        # chunk (llama.cpp, transformers) are measured by their chunks
        res.completion_tokens = res.chunks
        res.tokens_from_chunks = True
    res.ok = res.error is None


def _apply_spec_details(details: Any, res: RequestResult) -> None:
    if not isinstance(details, dict):
        return

    def get(name: str) -> Any:
        return details.get(f"spec_{name}", details.get(name))

    verify = _int(get("verify_ct"))
    if verify:
        res.spec_verify_ct = verify
    res.accept_length = _float(get("accept_length"))
    res.accept_rate = _float(get("accept_rate"))
    _apply_histograms(details, res)


def _apply_histograms(fields: dict, res: RequestResult) -> None:
    res.spec_accept_histogram = acceptance.from_mapping(fields, acceptance.HISTOGRAM_KEYS)
    if res.spec_accept_histogram is not None:
        res.spec_cap_histogram = acceptance.from_mapping(fields, acceptance.CAP_HISTOGRAM_KEYS)
