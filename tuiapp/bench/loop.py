"""The continuous benchmark loop: warm-up, then runs of K requests at concurrency N.

Per run (closed loop, N workers pull the run's K requests; runs do not overlap):
  decode tok/s = mean over the run's successful requests of (N_i - 1)/(e2e_i - TTFT_i),
                 the single-stream figure the campaign's script printed;
  output tok/s = sum of completion tokens / run wall time (first send to last finish).
Across runs: mean, sample sd and Student-t 95% CI of the per-run decode tok/s.

A request that cannot connect means the server is gone: the loop says
``waiting_server``, retries with backoff, and carries on with the same run when the
server is back. Every other failure is one ``RequestDone(ok=False)``; nothing here
raises for a bad response.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from tuiapp.bench.client import (
    OPTIONAL_FIELDS,
    PATHS,
    STREAM_CUT,
    RequestResult,
    build_payload,
    make_client,
    stream_request,
)
from tuiapp.bench.settings import BenchSettings
from tuiapp.bench.workload import Prompt, build
from tuiapp.common import stats
from tuiapp.events import Alert, BenchState, BenchSummary, Note, RequestDone, RunDone, RunFigures

Publish = Callable[[Any], None]

_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
NAN_ALERT_ID = 4_000_001  # fixed: the bench's one numerical-fault alert


class BenchLoop:
    def __init__(
        self,
        publish: Publish,
        base_url: str,
        settings: BenchSettings,
        *,
        api_key: str | None = None,
        trial: str | None = None,
    ) -> None:
        self.publish = publish
        self.base_url = base_url.rstrip("/")
        self.settings = settings
        self.trial = trial
        self.results: list[RunFigures] = []
        self.state = "stopped"
        self._api_key = api_key
        self._prompts: list[Prompt] = build(settings.workload, input_tokens=settings.input_tokens, seed=settings.seed)
        self._prompt_iter = itertools.cycle(self._prompts)
        self._running = asyncio.Event()
        self._running.set()
        self._stop = asyncio.Event()
        self._restart = False
        self._generation = 0  # bumped by restart(): results of an older generation are dropped
        self._server_ok = asyncio.Event()
        self._server_ok.set()
        self._model: str | None = settings.model
        self._run_index = 0
        self._nan_count = 0
        self._failed_runs = 0
        self._outages_in_a_row = 0  # a /health that says 200 while /generate says 503 must not spin
        self._paused_total_s = 0.0
        self._paused_since: float | None = None
        self._omit: frozenset[str] = frozenset()  # optional fields this server refused
        self._in_flight = 0
        self._serial = False  # the server serves one request at a time: send ours one by one
        self._serial_lock = asyncio.Lock()
        self._noted: set[str] = set()  # one-time notes already given
        self.warmup_failed: str | None = None  # why every warm-up request failed

    # ------------------------------------------------------------ controls

    def pause(self) -> None:
        if self._running.is_set() and not self._stop.is_set():
            self._running.clear()
            self._paused_since = time.perf_counter()
            self._set_state("paused", "paused by user; in-flight requests finish")

    def resume(self) -> None:
        if not self._running.is_set():
            self._unpause()
            self._set_state("running", "resumed")

    def stop(self) -> None:
        self._stop.set()
        self._unpause()  # wake a paused loop so it can end

    def _unpause(self) -> None:
        if self._paused_since is not None:
            self._paused_total_s += time.perf_counter() - self._paused_since
            self._paused_since = None
        self._running.set()

    def _paused_s(self) -> float:
        since = self._paused_since
        return self._paused_total_s + (time.perf_counter() - since if since is not None else 0.0)

    def restart(self) -> None:
        """Forget the runs so far and start numbering again (after a fresh cache flush)."""
        self._restart = True
        self._generation += 1
        self._unpause()

    # ------------------------------------------------------------ figures

    def decode_runs(self) -> list[float]:
        return [r.decode_tok_s for r in self.results if r.decode_tok_s is not None]

    def summary(self) -> dict[str, Any]:
        """The --summary JSON: per-run figures and decode tok/s statistics."""
        decode = self.decode_runs()
        ci = stats.ci95(decode)
        return {
            "runs": [
                {
                    "decode_tok_s": r.decode_tok_s,
                    "output_tok_s": r.output_tok_s,
                    "ttft_s": r.ttft_s,
                    "itl_s": r.itl_s,
                    "accept_length": r.accept_length,
                    "errors": r.errors,
                    "first_error": r.first_error,
                }
                for r in self.results
            ],
            "mean_decode_tok_s": stats.mean(decode),
            "sd_decode_tok_s": stats.sd(decode),
            "ci95_decode_tok_s": list(ci) if ci else None,
        }

    # ------------------------------------------------------------ the loop

    async def run(self) -> None:
        s = self.settings
        self._url = self.base_url + PATHS[s.api]
        async with make_client(s.timeouts, api_key=self._api_key, concurrency=s.concurrency) as client:
            try:
                await self._prepare(client)
                while not self._stop.is_set():
                    if self._restart:
                        self._restart = False
                        self.results = []
                        self._run_index = 0
                        self._set_state("warming_up", "restarted: flushing cache, new run numbering")
                        await self._flush_cache(client)
                    if s.runs is not None and len(self.results) >= s.runs:
                        break
                    await self._running.wait()
                    if self._stop.is_set():
                        break
                    if self._restart:
                        continue
                    if self.state != "running":
                        self._set_state("running")
                    run = await self._one_run(client)
                    await self._back_off_after_failed_run(run)
            except _StopNow:
                pass
            except _WarmupFailed:
                self._set_state("failed", f"every warm-up request failed: {self.warmup_failed}")
                return
        self._set_state("done" if s.runs is not None and len(self.results) >= s.runs else "stopped")

    async def _prepare(self, client: httpx.AsyncClient) -> None:
        s = self.settings
        if s.api != "generate" and self._model is None:
            self._model = await self._discover_model(client)
        if s.warmup_requests:
            self._set_state("warming_up", f"{s.warmup_requests} warm-up request(s), not counted")
            failures: list[RequestResult] = []
            for _ in range(s.warmup_requests):
                res = await self._request(client, max_new_tokens=min(32, s.max_new_tokens))
                if not res.ok and not res.cancelled:
                    failures.append(res)
            if len(failures) == s.warmup_requests and not self._stop.is_set():
                # a server that refuses every request will refuse every run too: say why, stop
                self.warmup_failed = failures[0].error or "unknown error"
                self._note("error", f"every warm-up request failed ({len(failures)} of {s.warmup_requests}):"
                                    f" {self.warmup_failed}; stopping")
                raise _WarmupFailed
        if s.flush_cache:
            await self._flush_cache(client)

    async def _one_run(self, client: httpx.AsyncClient) -> RunDone | None:
        s = self.settings
        generation = self._generation
        run_index = self._run_index
        k = s.run_size
        counter = iter(range(k))
        done: list[RequestResult] = []
        t_start = time.perf_counter()

        async def worker() -> None:
            for req_index in counter:
                await self._running.wait()
                if self._stop.is_set() or generation != self._generation:
                    return
                res = await self._request(client, on_cancel=lambda i=req_index: self.publish(_request_event(
                    run_index, i, RequestResult(error="cancelled: stopped by tuiapp", cancelled=True))))
                if generation != self._generation:
                    return
                done.append(res)
                self.publish(_request_event(run_index, req_index, res))
                if res.numerical_fault:
                    self._nan_count += 1
                    self.publish(
                        Alert(
                            alert_kind="numerical",
                            message=(
                                f"request finished with 'NaN happened' (run {run_index}, request {req_index};"
                                f" {self._nan_count} so far)"
                            ),
                            source="bench",
                            alert_id=NAN_ALERT_ID,  # later NaN finishes update one alert
                        )
                    )

        paused_before_s = self._paused_s()
        tasks = [asyncio.ensure_future(worker()) for _ in range(min(s.concurrency, k))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
        # A pause inside a run is not run time: in-flight requests finished, nothing new started.
        wall_s = max(time.perf_counter() - t_start - (self._paused_s() - paused_before_s), 1e-9)
        if generation != self._generation or self._stop.is_set() and len(done) < k:
            return None  # a restarted or stopped run is not a run
        self._run_index += 1
        run = _run_event(run_index, done, wall_s, s.concurrency, self.trial)
        self.results.append(RunFigures(run))
        self.publish(run)
        self._publish_summary()
        return run

    def _publish_summary(self) -> None:
        decode = self.decode_runs()
        output = [r.output_tok_s for r in self.results if r.output_tok_s is not None]
        accept = [r.accept_length for r in self.results if r.accept_length is not None]
        ci = stats.ci95(decode)
        self.publish(
            BenchSummary(
                runs=len(self.results),
                mean_decode_tok_s=stats.mean(decode),
                sd_decode_tok_s=stats.sd(decode),
                ci95_decode_tok_s=ci,
                mean_output_tok_s=stats.mean(output),
                accept_length=stats.mean(accept),
                trial=self.trial,
            )
        )

    async def _request(self, client: httpx.AsyncClient, max_new_tokens: int | None = None,
                       on_cancel: Callable[[], None] | None = None) -> RequestResult:
        """One request; while the server is unreachable, wait for it instead of failing."""
        s = self.settings
        prompt = next(self._prompt_iter)
        if max_new_tokens is not None:
            prompt = Prompt(prompt.text, prompt.input_ids, prompt.messages, max_new_tokens)
        while True:
            payload = build_payload(s.api, prompt, s, self._model, self._omit)
            await self._server_ok.wait()
            if self._stop.is_set():
                raise _StopNow
            serial = self._serial_lock if self._serial else contextlib.nullcontext()
            async with serial:
                others = self._in_flight
                self._in_flight += 1
                try:
                    res = await stream_request(client, self._url, s.api, payload, s.timeouts,
                                               prompt.max_new_tokens or s.max_new_tokens)
                except asyncio.CancelledError:
                    if on_cancel is not None:  # quit, SIGINT: a request in flight that we cut off
                        on_cancel()
                    raise
                finally:
                    self._in_flight -= 1
            if self._stop.is_set() and not res.ok:
                res.cancelled = True  # cut off by our own stop (e.g. the trial's server stopped)
                return res
            if res.http_status in (400, 422) and self._drop_refused_field(res):
                continue
            overlapped = others or self._in_flight
            if res.http_status in (429, 503) and overlapped:
                # busy, not down: a server that serves one request at a time refused the
                # second; from now on ours go one at a time
                self._one_at_a_time(f"refused a request while {overlapped} of ours were in flight"
                                    f" (HTTP {res.http_status})")
                await self._until_idle()
                continue
            if res.error == STREAM_CUT and overlapped:
                # llama-cpp-python ends the running stream when the next request arrives
                self._one_at_a_time(f"cut a stream short while {overlapped} of ours were in flight")
            if res.tokens_from_chunks:
                self._note_once("chunks", "warning", "the server sends no token usage: counting one token per"
                                " streamed chunk")
            # 503: listening but not serving (SGLang while it starts): wait, do not hammer it.
            if not res.connect_failed and res.http_status != 503:
                self._outages_in_a_row = 0
                return res
            await self._wait_for_server(client, res.error or "cannot connect")

    def _drop_refused_field(self, res: RequestResult) -> bool:
        """A 400/422 that names optional fields we sent: stop sending them (once per field)."""
        body = _refused_text(res.error_body or "")
        named = [n for n in OPTIONAL_FIELDS if n not in self._omit and re.search(rf"\b{n}\b", body)]
        if not named:
            return False
        self._omit = self._omit | set(named)
        fields = ", ".join(f"'{n}'" for n in named)
        self._note("warning", f"the server refused {fields} ({res.error}); sending requests without it")
        return True

    async def _until_idle(self) -> None:
        while self._in_flight and not self._stop.is_set():
            await asyncio.sleep(0.01)

    def _one_at_a_time(self, what: str) -> None:
        if not self._serial:
            self._serial = True
            self._note("warning", f"the server {what}: it serves one request at a time, so ours now go one at"
                                  " a time; --concurrency 1 measures it as it is")

    def _note_once(self, key: str, level: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self._note(level, text)

    async def _back_off_after_failed_run(self, last: RunDone | None) -> None:
        """A run where every request failed (bad model name, server rejecting everything)
        must not spin: wait 0.1 s, 0.2 s, ... up to 10 s before the next one."""
        if last is None:
            return
        if last.errors < last.requests:
            self._failed_runs = 0
            return
        delay_s = min(0.1 * 2**self._failed_runs, 10.0)
        self._failed_runs += 1
        if self._failed_runs == 1:
            self._note("warning", f"every request of run {last.run_index} failed ({last.first_error});"
                                  " slowing down until one succeeds")
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=delay_s)
        except asyncio.TimeoutError:
            pass

    async def _wait_for_server(self, client: httpx.AsyncClient, why: str) -> None:
        """One worker probes with backoff; the others wait on the event it sets."""
        if not self._server_ok.is_set():
            return
        self._server_ok.clear()
        self._outages_in_a_row += 1
        since = time.perf_counter()
        previous = self.state
        self._set_state("waiting_server", f"server unreachable ({why}); retrying")
        try:
            for attempt in itertools.count():
                if self._stop.is_set():
                    return
                step = attempt + self._outages_in_a_row - 1
                delay_s = _BACKOFF_S[min(step, len(_BACKOFF_S) - 1)]
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=delay_s)
                    return
                except asyncio.TimeoutError:
                    pass
                if await self._probe(client):
                    break
            self._set_state(previous if previous != "waiting_server" else "running", "server is back")
        finally:
            # Like a pause, an outage is not run time (the run's failed requests say it happened).
            if self._paused_since is None:  # a pause during the outage already counts
                self._paused_total_s += time.perf_counter() - since
            self._server_ok.set()

    async def _probe(self, client: httpx.AsyncClient) -> bool:
        try:
            resp = await client.get(self.base_url + "/health", timeout=5.0)
        except httpx.HTTPError:
            return False
        # Any HTTP answer means the process is listening again; 503 (still loading) is
        # not ready yet. Servers without /health answer 404: good enough.
        return resp.status_code != 503

    async def _flush_cache(self, client: httpx.AsyncClient) -> None:
        try:
            resp = await client.post(self.base_url + "/flush_cache", timeout=10.0)
        except httpx.HTTPError as exc:
            self._note("warning", f"cache flush failed: {type(exc).__name__}")
            return
        if resp.status_code != 200:
            self._note("warning", f"cache flush refused (HTTP {resp.status_code}); accept length spans earlier requests")

    async def _discover_model(self, client: httpx.AsyncClient) -> str | None:
        try:
            resp = await client.get(self.base_url + "/v1/models", timeout=5.0)
            data = resp.json().get("data") or []
            return data[0]["id"] if data else None
        except (httpx.HTTPError, ValueError, KeyError, IndexError, AttributeError, TypeError):
            return None

    def _set_state(self, state: str, message: str = "") -> None:
        self.state = state
        self.publish(BenchState(state=state, message=message))

    def _note(self, level: str, text: str) -> None:
        self.publish(Note(level=level, text=text, source="bench"))


def _refused_text(body: str) -> str:
    """Where a refusal names fields: FastAPI/pydantic's ``detail[].loc`` when it has them
    (their ``input`` echoes the whole request, every field we sent), else the whole text."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    detail = obj.get("detail") if isinstance(obj, dict) else None
    if isinstance(detail, list) and detail and all(isinstance(d, dict) and "loc" in d for d in detail):
        return " ".join(str(d["loc"][-1]) for d in detail if isinstance(d["loc"], list) and d["loc"])
    return body


class _StopNow(Exception):
    """stop() while a worker was waiting for the server."""


class _WarmupFailed(Exception):
    """Every warm-up request failed: the loop ends instead of failing every run."""


def _request_event(run_index: int, req_index: int, r: RequestResult) -> RequestDone:
    return RequestDone(
        run_index=run_index,
        request_index=req_index,
        ok=r.ok,
        error=r.error,
        prompt_tokens=r.prompt_tokens,
        completion_tokens=r.completion_tokens,
        ttft_s=r.ttft_s,
        itl_s=r.itl_s,
        e2e_s=r.e2e_s,
        decode_tok_s=r.decode_tok_s,
        chunks=r.chunks or None,
        tokens_per_chunk=r.tokens_per_chunk,
        chunk_gap_mean_s=r.chunk_gap_mean_s,
        accept_length=r.accept_length,
        accept_rate=r.accept_rate,
        spec_verify_ct=r.spec_verify_ct,
        finish_reason=r.finish_reason,
        numerical_fault=r.numerical_fault,
        cancelled=r.cancelled,
    )


def _run_event(run_index: int, done: list[RequestResult], wall_s: float, concurrency: int, trial: str | None) -> RunDone:
    good = [r for r in done if r.ok]
    failed = [r for r in done if not r.ok and not r.cancelled]
    decode = [d for r in good if (d := r.decode_tok_s) is not None]
    tokens = sum(r.completion_tokens or 0 for r in good)
    verify = sum(r.spec_verify_ct or 0 for r in good if r.accept_length is not None)
    spec_tokens = sum(r.completion_tokens or 0 for r in good if r.spec_verify_ct and r.accept_length is not None)
    rates = [r.accept_rate for r in good if r.accept_rate is not None]
    return RunDone(
        run_index=run_index,
        requests=len(done),
        errors=len(failed),
        first_error=failed[0].error if failed else None,
        concurrency=concurrency,
        duration_s=wall_s,
        decode_tok_s=stats.mean(decode),
        output_tok_s=tokens / wall_s if good and wall_s > 0 else None,
        ttft_s=stats.mean([r.ttft_s for r in good if r.ttft_s is not None]),
        itl_s=stats.mean([i for r in good if (i := r.itl_s) is not None]),
        # token-weighted, as the server computes it: tokens / verify steps over the run
        accept_length=spec_tokens / verify if verify else stats.mean([r.accept_length for r in good if r.accept_length is not None]),
        accept_rate=stats.mean(rates),
        trial=trial,
    )
