"""The continuous benchmark loop: warm-up, then runs of K requests at concurrency N.

Per run (closed loop, N workers pull the run's K requests; runs do not overlap):
  decode tok/s = mean over the run's successful requests of (N_i - 1)/(e2e_i - TTFT_i),
                 the single-stream figure the campaign's script printed;
  output tok/s = sum of completion tokens / run wall time (first send to last finish).
Across runs: mean, sample sd and Student-t 95% CI of the per-run decode tok/s.

A request that cannot connect means the server is gone: the loop says
``waiting_server``, retries with backoff, and carries on with the same run when the
server is back. Every other failure is one ``RequestDone(ok=False)`` with its outcome
(tuiapp/common/outcome.py); a refusal of a full queue (429, a 503 while others of ours are
served) is a failed request of its own reason, never retried and never a reason to change
the load. Nothing here raises for a bad response.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import random
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
    stream_request,
)
from tuiapp.bench.http_client import make_client
from tuiapp.bench.points import (
    PointTally,
    load_text,
    next_probe,
    point_event,
    point_summary,
)
from tuiapp.bench.run_events import nan_alert, request_event, run_event
from tuiapp.bench.settings import BenchSettings
from tuiapp.bench.workload import Prompt, build
from tuiapp.common import acceptance, stats
from tuiapp.common.outcome import classify, says_queue_full
from tuiapp.common.verdict import max_load_answer, meets_goal
from tuiapp.events import (
    BenchState,
    BenchSummary,
    Note,
    OutputCheck,
    PointDone,
    RunDone,
    RunFigures,
)
from tuiapp.server.states import ServerWatch

Publish = Callable[[Any], None]

_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
DEFAULT_POINT_RUNS = 3  # a sweep's or search's runs per point when --runs is not given


class BenchLoop:
    def __init__(
        self,
        publish: Publish,
        base_url: str,
        settings: BenchSettings,
        *,
        api_key: str | None = None,
        trial: str | None = None,
        watch: ServerWatch | None = None,
    ) -> None:
        self.publish = publish
        # the serving -> unreachable -> back cycle (tuiapp/server/states.py): the incident,
        # the header's state, and giving up after --server-wait-s
        self.watch = watch
        self.base_url = base_url.rstrip("/")
        self.settings = settings
        self.trial = trial
        self.results: list[RunFigures] = []
        self.state = "stopped"
        self._api_key = api_key
        self._prompts: list[Prompt] = build(settings.workload, seed=settings.seed, settings=settings)
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
        self.points: list[PointDone] = []
        self.max_load: dict[str, Any] | None = None  # --find-max-load's answer
        self._point = settings
        self._point_index = 0
        self._finished = False

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
        """The --summary JSON: per-run figures and decode tok/s statistics; with speculative
        decoding, each run's and all runs' acceptance per draft position and the histograms it
        comes from (tuiapp.common.acceptance)."""
        decode = self.decode_runs()
        ci = stats.ci95(decode)
        accepted, caps = acceptance.pool_pairs((r.spec_accept_histogram, r.spec_cap_histogram) for r in self.results)
        spec = {"spec_accept_histogram": accepted, "spec_cap_histogram": caps,
                **acceptance.figures(accepted, caps)} if accepted else {}
        return {
            "runs": [
                {
                    "decode_tok_s": r.decode_tok_s,
                    "output_tok_s": r.output_tok_s,
                    "ttft_s": r.ttft_s,
                    "tpot_s": r.tpot_s,
                    "accept_length": r.accept_length,
                    "errors": r.errors,
                    "first_error": r.first_error,
                    **({"spec_accept_histogram": r.spec_accept_histogram, "spec_cap_histogram": r.spec_cap_histogram,
                        **acceptance.figures(r.spec_accept_histogram, r.spec_cap_histogram)}
                       if r.spec_accept_histogram else {}),
                }
                for r in self.results
            ],
            "mean_decode_tok_s": stats.mean(decode),
            "sd_decode_tok_s": stats.sd(decode),
            "ci95_decode_tok_s": list(ci) if ci else None,
            "points": [point_summary(p) for p in self.points],
            **spec,
            **self._load_summary(),
        }

    def _load_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        rates = [p.sent_request_rate for p in self.points if p.sent_request_rate is not None]
        if self.settings.request_rate is not None and len(self.points) == 1 and rates:
            out["request_rate"] = self.settings.request_rate
            out["sent_request_rate"] = rates[0]
        if self.settings.has_slo:
            out["slo"] = {k: v for k, v in (("ttft_ms", self.settings.slo_ttft_ms), ("tpot_ms", self.settings.slo_tpot_ms),
                                             ("e2e_ms", self.settings.slo_e2e_ms)) if v is not None}
        if self.max_load is not None:
            out["max_load"] = self.max_load
        return out

    # ------------------------------------------------------------ the loop

    async def run(self) -> None:
        s = self.settings
        self._url = self.base_url + PATHS[s.api]
        async with make_client(s.timeouts, api_key=self._api_key, concurrency=_pool_size(s)) as client:
            try:
                await self._prepare(client)
                if s.find_max_load:
                    await self._search(client)
                else:
                    points = s.points()
                    for index, point in enumerate(points):
                        if self._stop.is_set():
                            break
                        await self._run_point(client, index, point, len(points))
            except _StopNow:
                pass
            except _WarmupFailed:
                self._set_state("failed", f"every warm-up request failed: {self.warmup_failed}")
                return
        self._set_state("done" if self._finished else "stopped")

    async def _run_point(self, client: httpx.AsyncClient, index: int, point: BenchSettings, total: int,
                         *, search: bool = False) -> PointDone | None:
        """``runs`` runs at one load; publishes the point's figures (None when stopped first)."""
        self._point = point
        self._point_index = index
        tally = PointTally(point)
        runs = point.runs if point.runs is not None else (DEFAULT_POINT_RUNS if total > 1 or search else None)
        if total > 1 or search:
            self._note("info", f"load point {index + 1}{'' if search else f' of {total}'}: {load_text(point)}"
                               f", {runs} run(s)")
        self._finished = False
        while not self._stop.is_set():
            if self._restart:
                self._restart = False
                self.results = [r for r in self.results if r.point_index != index]
                self._run_index = len(self.results)
                tally = PointTally(point)
                self._set_state("warming_up", "restarted: flushing cache, new run numbering")
                await self._flush_cache(client)
            if runs is not None and len(tally.run_walls_s) >= runs:
                self._finished = True
                break
            await self._running.wait()
            if self._stop.is_set():
                break
            if self._restart:
                continue
            if self.state != "running":
                self._set_state("running")
            run = await self._one_run(client, tally)
            await self._back_off_after_failed_run(run)
        if not tally.run_walls_s:
            return None
        ev = point_event(index, point, tally, self.trial, search=search)
        self.points.append(ev)
        self.publish(ev)
        return ev

    async def _search(self, client: httpx.AsyncClient) -> None:
        """--find-max-load: bisection over the rate (open loop) or the concurrency. A probe
        passes by tuiapp.common.verdict.meets_goal; the answer is kept after every probe,
        so a stop keeps what was found."""
        s = self.settings
        by_rate = s.request_rate is not None or s.sweep == "request_rate"
        name = "request_rate" if by_rate else "concurrency"
        start = s.request_rate or (s.sweep_values[0] if s.sweep_values else float(s.concurrency))
        history: list[tuple[float, bool]] = []
        while not self._stop.is_set():
            load = next_probe(history, start, whole=not by_rate, max_points=s.max_search_points)
            if load is None:
                break
            point = s.at_load(name, load)
            ev = await self._run_point(client, len(history), point, 0, search=True)
            if ev is None or not self._finished:
                break
            ok, why = meets_goal(ev)
            history.append((load, ok))
            self._note("info", f"probe {load:g} {'req/s' if by_rate else 'streams'}: {'passed' if ok else 'failed'}"
                               f" ({why})")
            self.max_load = max_load_answer(history, name)
        if self.max_load is None:
            return
        self.max_load["complete"] = not self._stop.is_set()
        self._note("info", self.max_load["text"])

    async def _prepare(self, client: httpx.AsyncClient) -> None:
        s = self.settings
        if s.api != "generate" and self._model is None:
            self._model = await self._discover_model(client)
        if s.warmup_requests:
            self._set_state("warming_up", f"{s.warmup_requests} warm-up request(s), not counted")
            failures: list[RequestResult] = []
            for _ in range(s.warmup_requests):
                res = await self._request(client, max_new_tokens=min(32, s.max_new_tokens))
                if not res.ok and not res.cancelled:  # a transport or HTTP failure: NaN output still runs
                    failures.append(res)
            if len(failures) == s.warmup_requests and not self._stop.is_set():
                # a server that refuses every request will refuse every run too: say why, stop
                self.warmup_failed = failures[0].error or "unknown error"
                self._note("error", f"every warm-up request failed ({len(failures)} of {s.warmup_requests}):"
                                    f" {self.warmup_failed}; stopping")
                raise _WarmupFailed
        if s.check_output and not self._stop.is_set():
            await self._check_output(client)
        if s.flush_cache:
            await self._flush_cache(client)

    async def _one_run(self, client: httpx.AsyncClient, tally: PointTally) -> RunDone | None:
        p = self._point
        generation = self._generation
        run_index = self._run_index
        k = p.run_size
        done: list[RequestResult] = []
        sends_s: list[float] = []
        dues_s: list[float] = []  # open loop: when each arrival was due
        finishes_s: list[float] = []  # when each successful request came back
        t_start = time.perf_counter()

        call_soon = asyncio.get_running_loop().call_soon

        async def one(req_index: int, due_s: float | None = None) -> bool:
            """One request of the run; False when the run was stopped or restarted."""
            res = await self._request(client, on_cancel=lambda i=req_index: self.publish(request_event(
                run_index, i, RequestResult(error="cancelled: stopped by tuiapp", cancelled=True))),
                sends_s=sends_s, due_s=due_s)
            if generation != self._generation:
                return False
            if classify(res) == "ok":
                finishes_s.append(time.perf_counter())
            done.append(res)
            # published on the loop's next pass: a closed loop's next request goes first, with
            # no work of ours between this response's end and that send (a burst's sends stay
            # as close together as the responses' ends; see bench/http_client.py)
            call_soon(self._published, run_index, req_index, res)
            return True

        paused_before_s = self._paused_s()
        if p.request_rate is None:
            counter = iter(range(k))

            async def worker() -> None:
                for req_index in counter:
                    await self._running.wait()
                    if self._stop.is_set() or generation != self._generation:
                        return
                    if not await one(req_index):
                        return

            tasks = [asyncio.ensure_future(worker()) for _ in range(min(p.concurrency, k))]
        else:
            tasks = await self._arrivals(p, k, run_index, generation, one, dues_s)
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
        run = run_event(run_index, done, wall_s, p.concurrency, self.trial)
        if p.request_rate is not None or self._point_index:
            run = run.model_copy(update={"request_rate": p.request_rate, "point_index": self._point_index})
        tally.add_run(done, wall_s, run.output_tok_s, sends_s if p.request_rate is not None else None, dues_s,
                      finishes_s, run.decode_tok_s)
        self.results.append(RunFigures(run))
        self.publish(run)
        self._publish_summary()
        return run

    def _published(self, run_index: int, req_index: int, res: RequestResult) -> None:
        self.publish(request_event(run_index, req_index, res))
        if res.numerical_fault:
            self._nan_count += 1
            self.publish(nan_alert(run_index, req_index, self._nan_count))

    async def _arrivals(self, p: BenchSettings, k: int, run_index: int, generation: int,
                        one: Callable[[int], Any], dues_s: list[float]) -> list[asyncio.Future]:
        """Open loop: start request i at the i-th arrival of a gamma process (shape
        ``burstiness``, mean gap 1/rate; shape 1 is Poisson), whatever is in flight;
        ``max_concurrency`` makes arrivals beyond the cap wait for a free slot."""
        rng = random.Random(p.seed * 1_000_003 + run_index)
        shape = p.burstiness
        scale_s = 1.0 / (p.request_rate * shape)  # type: ignore[operator]
        cap = asyncio.Semaphore(p.max_concurrency) if p.max_concurrency else None

        async def capped(i: int, due_s: float) -> None:
            # latency counts from due_s: a wait for a free slot is the server's queue moved
            # into the client, and hiding it is coordinated omission
            if cap is None:
                await one(i, due_s)
                return
            async with cap:
                await one(i, due_s)

        tasks: list[asyncio.Future] = []
        due_s = time.perf_counter()
        for i in range(k):
            if not self._running.is_set():
                await self._running.wait()
                due_s = time.perf_counter()  # a pause is not a gap between arrivals
            if self._stop.is_set() or generation != self._generation:
                break
            wait_s = due_s - time.perf_counter()
            if wait_s > 0:
                await asyncio.sleep(wait_s)
            dues_s.append(due_s)
            tasks.append(asyncio.ensure_future(capped(i, due_s)))
            due_s += rng.gammavariate(shape, scale_s)
        return tasks

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
                       on_cancel: Callable[[], None] | None = None, sends_s: list[float] | None = None,
                       due_s: float | None = None) -> RequestResult:
        """One request; while the server is unreachable, wait for it instead of failing.
        ``due_s`` (open loop): its scheduled send time, from which its TTFT and e2e count."""
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
                sent_s = time.perf_counter()
                if sends_s is not None:
                    sends_s.append(sent_s)
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
            if res.http_status == 429 or res.http_status == 503 and (overlapped or says_queue_full(res.error)):
                # busy, not down: the server's queue is full. A failed request of its own
                # reason ("refused"), never sent again: a retry would hide the overload, and
                # going serial would measure another load than the one asked for
                res.refused = True
                self._note_once("refused", "warning", f"the server refused a request while {overlapped} of ours"
                                f" were in flight ({res.error}); refusals count as failed requests")
            if res.error == STREAM_CUT and overlapped:
                # llama-cpp-python ends the running stream when the next request arrives
                self._one_at_a_time(f"cut a stream short while {overlapped} of ours were in flight")
            if res.tokens_from_chunks:
                self._note_once("chunks", "warning", "the server sends no token usage: counting one token per"
                                " streamed chunk")
            # 503: listening but not serving (SGLang while it starts): wait, do not hammer it.
            if not res.connect_failed and (res.http_status != 503 or res.refused):
                self._outages_in_a_row = 0
                if due_s is not None:
                    res.lag_s = max(sent_s - due_s, 0.0)
                    if res.ttft_s is not None:
                        res.ttft_s += res.lag_s
                    if res.e2e_s is not None:
                        res.e2e_s += res.lag_s
                return res
            await self._wait_for_server(client, res.error or "cannot connect", refused=res.connect_failed)

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

    async def _wait_for_server(self, client: httpx.AsyncClient, why: str, refused: bool = True) -> None:
        """One worker probes with backoff; the others wait on the event it sets."""
        if not self._server_ok.is_set():
            return
        self._server_ok.clear()
        self._outages_in_a_row += 1
        since = time.perf_counter()
        previous = self.state
        self._set_state("waiting_server", f"server unreachable ({why}); retrying")
        watch = self.watch
        if watch is not None:
            watch.lost(why, refused=refused)
        try:
            for attempt in itertools.count():
                if self._stop.is_set():
                    return
                step = attempt + self._outages_in_a_row - 1
                delay_s = _BACKOFF_S[min(step, len(_BACKOFF_S) - 1)]
                left_s = watch.remaining_s() if watch is not None else None
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=delay_s if left_s is None else min(delay_s, left_s))
                    return
                except asyncio.TimeoutError:
                    pass
                if await self._probe(client):
                    break
                if watch is not None and watch.gave_up():
                    self.stop()  # the workers see the stop when the event below lets them go
                    return
            if watch is not None:
                watch.back()
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

    async def _check_output(self, client: httpx.AsyncClient, prompts: int = 4) -> None:
        """bench check_output: the first prompts one at a time (batching can change greedy
        output), not streamed, their text hashed into an OutputCheck event."""
        s = self.settings
        digests: dict[str, str] = {}
        for i, prompt in enumerate(self._prompts[:prompts]):
            body = orjson.loads(build_payload(s.api, prompt, s, self._model, self._omit))
            body["stream"] = False
            body.pop("stream_options", None)
            try:
                resp = await client.post(self._url, content=orjson.dumps(body), timeout=s.timeouts.first_token_s * 4,
                                         headers={"content-type": "application/json"})
                text = _output_text(resp.json()) if resp.status_code == 200 else None
            except (httpx.HTTPError, ValueError) as exc:
                self._note("warning", f"output check: prompt {i} failed ({type(exc).__name__}); not checked")
                continue
            if text is None:
                self._note("warning", f"output check: prompt {i} got HTTP {resp.status_code} or no text; not checked")
                continue
            digests[str(i)] = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
        self.publish(OutputCheck(digests=digests, trial=self.trial))

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


def _output_text(obj: Any) -> str | None:
    """The generated text of a non-streamed answer: /generate's ``text``, a completion's
    ``choices[0].text``, a chat completion's ``choices[0].message.content``."""
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("text"), str):
        return obj["text"]
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else choice.get("text")
        return text if isinstance(text, str) else None
    return None


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


def _pool_size(s: BenchSettings) -> int:
    """Connections the loop may hold at once: the largest concurrency of any point. Open
    loop has no bound but its cap: a pool smaller than the requests in flight would queue
    arrivals in the client and hide the server's own queueing."""
    if s.request_rate is not None or s.sweep == "request_rate":
        return s.max_concurrency or 1024
    if s.find_max_load:
        return 1024
    return int(max([s.concurrency, *(s.sweep_values if s.sweep == "concurrency" else ())]))
