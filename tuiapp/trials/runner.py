"""Run a plan: for each trial preflight, launch, wait ready or fail, warm up, run, flush the
cache, collect, stop, next. A trial that fails is recorded with its cause and the plan goes
on; the ledger is saved after every trial so an interrupted plan can ``--resume``.

The runner is a session source: it publishes TrialState and TrialResult (plus everything
the launcher, log watcher, benchmark loop and GPU sampler of the current trial publish).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tuiapp.bus import EventBus
from tuiapp.common.acceptance_compare import pooled_by_position, runs_by_position
from tuiapp.common.task_stop import stop_tasks
from tuiapp.common.verdict import headline_point, invalid_reasons, load_of
from tuiapp.events import BenchState, Note, TrialResult, TrialState, _Event
from tuiapp.trials.collector import TrialCollector
from tuiapp.trials.diff import config_diff, confound_warning, diff_dict, knobs
from tuiapp.trials.flags import Flag
from tuiapp.trials.ledger import NOT_RUN, OK, Ledger, LedgerRow, fill_run_stats
from tuiapp.trials.plan import Plan, TrialConfig

SIM_COMMAND = (sys.executable, "-m", "tuiapp.sim.server")


@dataclass
class RunnerOptions:
    ledger_path: Path | None = None
    ledger_md: Path | None = None
    ledger_csv: Path | None = None
    resume: bool = False
    sim_speed: float | None = None  # set: run every server through the simulator
    telemetry: str = "auto"  # auto | nvml | sim | off
    log_dir: Path | None = None
    log_file: Path | None = None  # one trial (launch): its server log, wherever the user wants it
    preflight: bool = True
    gpu_interval_s: float = 1.0
    # HostSample only feeds the dashboard and recordings: a headless job that records
    # nothing would read /proc every second for no one.
    host_samples: bool = True


def sim_config(cfg: TrialConfig, speed: float, port: int) -> TrialConfig:
    """The trial with its server replaced by the simulator on a free port."""
    flags = dict(cfg.flags)
    flags["port"] = Flag("port", str(port))
    flags["host"] = Flag("host", "127.0.0.1")
    flags["sim-speed"] = Flag("sim-speed", repr(float(speed)))
    return replace(cfg, command=SIM_COMMAND, flags=flags)


class PlanRunner:
    def __init__(self, plan: Plan, trials: list[TrialConfig], ledger: Ledger,
                 options: RunnerOptions, *, on_done: Callable[[int], None] | None = None) -> None:
        self.plan = plan
        self.trials = trials
        self.ledger = ledger
        self.options = options
        self.on_done = on_done
        self.current: str | None = None
        self.bench = None  # the current BenchLoop (controls pause/resume it)
        self.max_load: dict | None = None  # the last trial's --find-max-load answer, complete or not
        self.server = None  # the current ServerProcess
        self._user_stopped = False
        self._tasks: set[asyncio.Task] = set()  # keep fire-and-forget stops referenced
        self.startup_s: float | None = None  # of the trial being finished
        self.returncode: int | None = None

    # ------------------------------------------------------------ controls

    def stop_server(self) -> None:
        """The user stopped the current trial's server: the trial is skipped, not failed."""
        self._user_stopped = True
        if self.server is not None:
            task = asyncio.get_running_loop().create_task(self.server.stop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def shutdown(self) -> None:
        if self.bench is not None:
            self.bench.stop()
        if self.server is not None:
            await self.server.stop()

    # ------------------------------------------------------------ the plan

    async def run(self, bus: EventBus) -> None:
        total = len(self.trials)
        for cfg in self.trials:
            changes = config_diff(self.plan.reference(cfg), cfg)
            warning = confound_warning(cfg.name, changes, self.plan.knob_groups)
            attributed_here = cfg.isolates == cfg.name  # --isolate is the answer to the warning
            if warning and not attributed_here and not self._resumed(cfg) and not self._searched(cfg):
                bus.publish(Note(level="warning", text=warning, source="trials"))
        started = time.monotonic()
        budget_s = self.plan.search.budget_s if self.plan.search is not None else None
        for index, cfg in enumerate(self.trials):
            if budget_s is not None and self._searched(cfg) and time.monotonic() - started >= budget_s:
                # not a result: --resume runs it later
                bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                       message=f"the search's budget of {budget_s:g} s is spent"))
                continue
            if self._resumed(cfg):
                bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                       message="already in the ledger"))
                continue
            if self.options.resume and self.ledger.done(cfg.name):
                bus.publish(Note(level="warning", source="trials",
                                 text=f"{cfg.name}: configuration changed since its ledger row; running it again"))
            self._user_stopped = False
            row = await self.run_trial(cfg, index, total, bus.publish)
            if row is None:  # stopped by the user: not a result, so --resume runs it again
                bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                       message="stopped by the user"))
                continue
            self.ledger.add(row)
            if self.plan.search is not None:
                self.ledger.rank(self.plan.search.objective)
            self._save(bus)
            final = self.ledger.rows[row.name]
            bus.publish(TrialResult(name=final.name, status=final.status, row=final.model_dump(mode="json")))
        for line in self.ledger.attribution():
            bus.publish(Note(level="info", text=f"attribution: {line}", source="trials"))
        # Failed trials are results; the job failed only when the reference of it all did.
        first = self.ledger.rows.get(self.trials[0].name) if self.trials else None
        if self.on_done is not None:
            self.on_done(0 if first is not None and first.status == OK else 1)

    def _searched(self, cfg: TrialConfig) -> bool:
        """A combination of the plan's [search]: ranked, not read for confounds."""
        return self.plan.search is not None and cfg.name in self.plan.search.names

    def _resumed(self, cfg: TrialConfig) -> bool:
        return self.options.resume and self.ledger.done(cfg.name, cfg.fingerprint())

    def _save(self, bus: EventBus) -> None:
        if self.options.ledger_path is None:
            return
        try:
            self.ledger.save(self.options.ledger_path, markdown=self.options.ledger_md,
                             csv_path=self.options.ledger_csv)
        except OSError as exc:  # a full disk costs the file, not the plan (the recording has it all)
            bus.publish(Note(level="error", source="trials",
                             text=f"ledger not saved: {exc.strerror or exc} ({exc.filename or ''})"))

    # ------------------------------------------------------------ one trial

    async def run_trial(self, cfg: TrialConfig, index: int, total: int,
                        publish: Callable[[_Event], None]) -> LedgerRow | None:
        from tuiapp.common.redact import redact_argv, redact_env
        from tuiapp.server.command import api_key_from, server_url
        from tuiapp.server.ports import free_port

        started = time.monotonic()
        changes = config_diff(self.plan.reference(cfg), cfg) if not cfg.is_baseline else []
        row = LedgerRow(
            name=cfg.name, status="error", note=cfg.note, is_baseline=cfg.is_baseline,
            baseline=None if cfg.is_baseline else self.plan.reference(cfg).name,
            diff=diff_dict(changes), knobs=list(knobs(changes, self.plan.knob_groups)),
            confound=None if self._searched(cfg) else confound_warning(cfg.name, changes, self.plan.knob_groups),
            isolates=cfg.isolates, knob=cfg.knob, env=redact_env(cfg.env), fingerprint=cfg.fingerprint(),
        )
        if self.options.sim_speed is not None:
            cfg = sim_config(cfg, self.options.sim_speed, free_port())
        argv = cfg.argv()
        row.argv = redact_argv(argv)

        def state(phase: str, message: str = "") -> None:
            publish(TrialState(name=cfg.name, index=index, total=total, phase=phase, message=message))

        shown_env = " ".join(f"{k}={v}" for k, v in row.env.items())
        state("preflight", " ".join(row.argv) + (f"  (env {shown_env})" if shown_env else ""))
        if self.options.preflight and (
                refused := await asyncio.to_thread(self._preflight, argv, publish, cfg.name)) is not None:
            row.status, row.first_error = refused
            state("failed", refused[1] if row.status == NOT_RUN else f"{row.status}: {refused[1]}")
            return row

        try:
            url, api_key = server_url(argv), api_key_from(argv)
        except ValueError as exc:  # e.g. --port abc: this trial cannot run, the plan goes on
            row.status, row.first_error = "preflight", str(exc)
            state("failed", str(exc))
            return row
        collector = TrialCollector()

        def observe(event: _Event) -> None:
            collector.observe(event)
            publish(event)
            if isinstance(event, BenchState) and event.state == "running" and not collector.benchmarking:
                collector.benchmarking = True
                state("running")

        self.current = cfg.name
        try:
            outcome = await self._launch_and_bench(cfg, argv, url, api_key, observe, state, collector)
        finally:
            if self.bench is not None and self.bench.max_load is not None:
                self.max_load = self.bench.max_load  # --find-max-load's answer so far: Ctrl-C keeps it
            self.current, self.bench, self.server = None, None, None
        if outcome == "stopped":
            return None
        self._fill(row, collector, outcome)
        row.duration_s = time.monotonic() - started
        state("done" if row.status == OK else "failed",
              "ok" if row.status == OK else f"{row.status}: {row.first_error or ''}")
        return row

    def _preflight(self, argv: list[str], publish: Callable[[_Event], None], name: str) -> tuple[str, str] | None:
        """``(status, first error as one line)``, or None; warnings and notes become Notes. The
        status is ``preflight``, or the failure the server's ``--help`` itself died of (``oom``...)."""
        first_error = None
        for problem in self._preflight_problems(argv):
            text = f"{name}: {problem.flag + ': ' if problem.flag else ''}{problem.message}"
            if problem.suggestion:
                text += f" ({problem.suggestion})"
            level = {"error": "error", "warning": "warning"}.get(problem.severity, "info")
            publish(Note(level=level, text=text, source="preflight"))
            if level == "error" and first_error is None:
                known = problem.kind if problem.kind and problem.kind != "error" else None
                first_error = (known or NOT_RUN, text.split(": ", 1)[1])
        return first_error

    def _preflight_problems(self, argv: list[str]) -> list:
        """What preflight finds in the server command (a Slurm trial may check it on a node)."""
        from tuiapp.logwatch.verdict import worst_failure
        from tuiapp.server.preflight import preflight

        return preflight(argv, classify=worst_failure)

    async def _launch_and_bench(self, cfg, argv, url, api_key, observe, state, collector) -> str:
        """Returns the outcome: ok | died | not_ready | launch_error:<msg> | run_timeout | stopped."""
        from tuiapp.bench.loop import BenchLoop
        from tuiapp.common.http_clients import ServerClient
        from tuiapp.logwatch.relay import LoopRelay
        from tuiapp.logwatch.watcher import LogWatcher
        from tuiapp.server.launcher import LaunchError, ServerProcess
        from tuiapp.server.metrics_poll import run_metrics_poller

        # A server that says it is going down gets no more requests: after a child crashed,
        # real SGLang spends 5-65 s on diagnostics before it kills its tree; after SIGTERM it
        # drains, and a closed-loop benchmark would keep it draining for ever.
        going_down = asyncio.Event()
        why_down: list[str] = []

        def watch(event: _Event) -> None:
            observe(event)
            if (reason := _going_down(event)) is not None and not going_down.is_set():
                why_down.append(reason)
                going_down.set()

        # The watcher runs on the launcher's output thread; the relay brings its events to
        # the loop, waking it at once only for what cannot wait a second.
        relay = LoopRelay(watch, _urgent)
        # The launcher reports readiness itself (line or /health): one "ready" is enough.
        watcher = LogWatcher(relay.put, ready_events=False)
        log_path = self.options.log_file
        if log_path is None and self.options.log_dir is not None:
            self.options.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.options.log_dir / f"{cfg.name.replace('/', '__')}.log"
        # One client of this server for the whole trial: health poll, info, metrics, GPUs, flush.
        http = ServerClient(url, api_key)
        server = ServerProcess(
            argv, publish=observe, env=cfg.env, log_path=log_path,
            output_consumer=watcher, ready_timeout_s=cfg.timeouts.ready_s, health_url=url,
            api_key=api_key, client=http.aio,
        )
        self.server = server
        self.bench = None
        helpers: list[asyncio.Task] = []
        outcome = "ok"
        state("launching")
        try:
            try:
                await server.start()
            except LaunchError as exc:
                return f"launch_error:{exc}"
            helpers.append(asyncio.create_task(self._gpu_sampler(observe, url, http, server)))
            if self.options.telemetry != "off" and self.options.host_samples:
                from tuiapp.telemetry import run_host_sampler

                helpers.append(asyncio.create_task(run_host_sampler(observe, server_pid=server.pid)))
            if not await server.wait_ready():
                if server.returncode is None:
                    collector.stopped(watcher.lines)  # a timeout: we stop it, it did not fail
                # an exited server's output is all in by now (the launcher drains it first)
                return "stopped" if self._user_stopped else "not_ready"
            found = await _publish_server_info(observe, url, api_key, http.aio, model=cfg.bench.model)
            # The server's own figures (/metrics when enabled, else /server_info) beside ours.
            helpers.append(asyncio.create_task(run_metrics_poller(observe, url, api_key=api_key,
                                                                  client=http.aio)))
            state("warming_up")
            bench = BenchLoop(observe, url, _for_server(cfg.bench, found), api_key=api_key, trial=cfg.name)
            self.bench = bench
            bench_task = asyncio.create_task(bench.run())
            died = asyncio.create_task(server.wait())
            down = asyncio.create_task(going_down.wait())
            done, _ = await asyncio.wait({bench_task, died, down}, timeout=cfg.timeouts.run_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            down.cancel()
            if down in done and bench_task not in done:
                bench.stop()
                bench_task.cancel()  # closes the streams: the server drops their requests
                await asyncio.gather(bench_task, return_exceptions=True)
                if why_down == ["drain"]:  # let it finish its own clean shutdown
                    await asyncio.wait({died}, timeout=DRAIN_WAIT_S)
                done = {died}
            collector.benchmarking = False
            if bench_task not in done:
                if died not in done and down not in done:
                    collector.stopped(watcher.lines)  # a run timeout or a stop: what follows is ours
                bench.stop()
                bench_task.cancel()
                await asyncio.gather(bench_task, return_exceptions=True)
                if self._user_stopped:
                    outcome = "stopped"
                else:
                    outcome = "died" if died in done else "run_timeout"
            elif (exc := bench_task.exception()) is not None:
                observe(Note(level="error", text=f"{cfg.name}: benchmark failed: {exc!r}", source="trials"))
            died.cancel()
            collector.runs = list(bench.results)  # restart() dropped earlier runs: so do we
            if outcome == "ok":
                await _flush_cache(url, http.aio)
            return outcome
        finally:
            self.startup_s = server.startup_s
            self.returncode = server.returncode
            if self.bench is not None:
                # first: the requests the server's stop cuts (a Ctrl-C, a quit) are then ours,
                # cancelled, never failures that judge a --find-max-load probe as failed
                self.bench.stop()
            state("stopping")
            await server.stop()
            await asyncio.sleep(0.05)  # the last output reaches the watcher
            watcher.flush()
            relay.close()
            if stuck := await stop_tasks(helpers):
                observe(Note(level="warning", source="trials",
                             text=f"{cfg.name}: {len(stuck)} helper task(s) ignored their stop; left running"))
            await http.aclose()

    def _gpu_interval_s(self) -> float:  # the simulator's start-up cadence (FAST_AFTER_READY_S)
        # the simulator compresses start-up: sample faster so short-lived servers are seen
        return self.options.gpu_interval_s / (4.0 if self.options.sim_speed else 1.0)

    async def _gpu_sampler(self, observe, url: str, http, server) -> None:
        from tuiapp.telemetry import run_telemetry

        kind = self.options.telemetry
        if kind == "auto" and (self.options.sim_speed is not None or is_sim_command(self.server)):
            kind = "sim"
        fast_s, steady_s = self._gpu_interval_s(), self.options.gpu_interval_s
        ready_at_s: list[float] = []

        def next_interval_s() -> float:
            # The compressed start-up and a short benchmark need the fast cadence; a trial
            # that runs on gets the real 1 s (8 GPUs at 4 Hz were 32 samples a second
            # through the bus for nothing new).
            if not server.ready:
                return fast_s
            if not ready_at_s:
                ready_at_s.append(time.monotonic())
            return steady_s if time.monotonic() - ready_at_s[0] >= FAST_AFTER_READY_S else fast_s

        await run_telemetry(observe, kind, sim_url=url, interval_s=fast_s, sim_client=http.sync,
                            next_interval_s=next_interval_s)

    def _fill(self, row: LedgerRow, collector: TrialCollector, outcome: str) -> None:
        row.startup_s = self.startup_s
        row.server_startup = collector.startup.as_json()
        row.alerts = [{"kind": a.alert_kind, "message": a.message, "ranks": a.ranks, "line": a.first_line}
                      for a in collector.alerts.values()]
        row.runs_decode_tok_s = collector.run_tok_s()
        row.runs_output_tok_s = collector.run_output_tok_s()
        row.mean_output_tok_s = collector.mean_output_tok_s()
        # a sweep or open loop: a curve to compare (a single closed-loop point is the row itself),
        # and its headline point's runs are the row's: never a pool of all loads
        if len(collector.points) > 1 or any(p.request_rate is not None for p in collector.points):
            from tuiapp.bench.points import point_summary

            row.points = [point_summary(p) for p in collector.points]
            head = headline_point(row.points, self.plan.headline)
            row.runs_decode_tok_s = [float(x) for x in (head or {}).get("decode_tok_s_runs") or []]
            row.runs_output_tok_s = [float(x) for x in (head or {}).get("output_tok_s_runs") or []]
            row.mean_output_tok_s = (head or {}).get("output_tok_s")
            load = load_of(head) if head is not None else None
            row.headline = f"{load[0]}={load[1]:g}" if load is not None else None
        fill_run_stats(row)
        row.requests = collector.requests
        row.failed_requests = sum(collector.failed_by_reason.values())
        row.errors_by_reason = dict(sorted(collector.failed_by_reason.items()))
        row.output_tokens = collector.output_tokens if collector.requests else None
        row.output_digests = dict(collector.output_digests)
        row.invalid = invalid_reasons(requests=row.requests, failed=row.failed_requests, output_tokens=row.output_tokens,
                                      runs=len(collector.runs), numerical_faults=collector.numerical_faults)
        row.mean_ttft_s = collector.mean_ttft_s()
        row.accept_length = collector.accept_length()
        row.accept_by_position = pooled_by_position(collector.accept_runs())
        row.runs_accept_by_position = runs_by_position(collector.accept_runs())
        row.peak_mem_bytes = {str(k): v for k, v in sorted(collector.peak_mem_bytes.items())}
        row.pcie_avg_bytes_s, row.pcie_peak_bytes_s = collector.pcie_avg_peak()
        first = collector.first_alert()
        if outcome == "ok" and row.runs_decode_tok_s:
            row.status = OK  # alerts that did not stop the benchmark stay in row.alerts
            return
        if outcome == "ok" and first is None:
            row.status = "error"
            row.first_error = collector.request_errors[0] if collector.request_errors else "no run completed"
            return
        if outcome.startswith("launch_error:"):
            # Never started (command not found, port taken): a set-up problem like a refused
            # preflight, not a server that crashed.
            row.status, row.first_error = NOT_RUN, outcome.split(":", 1)[1]
            return
        if first is not None:
            row.status = first.alert_kind
            row.first_error = first.message
            row.error_ranks = list(first.ranks)
            row.first_error_log_line = first.first_line
        elif outcome == "died" or (outcome == "not_ready" and self.returncode is not None
                                   and not collector.we_stopped):  # (a Slurm job we cancelled has a code too)
            row.status = "crash"
            row.first_error = f"server exited with code {self.returncode}"
        else:
            row.status = "timeout"
            which = "ready" if outcome == "not_ready" else "run"
            row.first_error = f"no result within the {which} timeout"


DRAIN_WAIT_S = 30.0
# With --sim, GPUs are sampled at 4 Hz until this long after ready, then every 1 s: the
# warm-up request and a benchmark's first seconds, so a benchmark of a second or two still
# gets samples whose interval lies within it (each sample cost ~1 ms of the demo's CPU; 5 s
# was 60 more of them over the campaign).
FAST_AFTER_READY_S = 3.0


def _urgent(event: _Event) -> bool:
    """What the log watcher publishes that must reach the loop at once: all but log lines
    and the log's batch figures, and those lines too when they mean the server is going down."""
    from tuiapp.events import LogLine, ServerStats

    return not isinstance(event, (LogLine, ServerStats)) or _going_down(event) is not None


def _going_down(event: _Event) -> str | None:
    """"crash" once SGLang's parent is killing its tree, "drain" once it shuts down on SIGTERM."""
    from tuiapp.events import Alert, LogLine

    if isinstance(event, Alert) and event.alert_kind == "crash" and event.severity == "error":
        return "crash"
    if isinstance(event, LogLine):
        if "SIGQUIT received" in event.text or "Received sigquit" in event.text:
            return "crash"
        if "SIGTERM received" in event.text and "shutting down" in event.text:
            return "drain"
    return None


async def _publish_server_info(publish, url: str, api_key: str | None, client=None, model: str | None = None):
    """Model, version and speculative config for the header; an old server may lack them.
    The discovery (server/discovery.py), or None."""
    from tuiapp.server.discovery import discover
    from tuiapp.server.info import ServerUnreachable

    try:
        found = await discover(url, model=model, api_key=api_key, client=client)
    except (ServerUnreachable, ValueError) as exc:
        publish(Note(level="warning", text=f"server info unavailable: {exc}", source="trials"))
        return None
    publish(found.info)
    for text in found.notes:
        publish(Note(level="warning", text=text, source="trials"))
    return found


def _for_server(bench, found):
    """A server that turned out not to be SGLang (``transformers serve``, ``vllm serve``)
    gets the standard API only, named as discovery found (launch's "generate" is its auto)."""
    from tuiapp.bench.settings import for_server

    if found is None or found.info.engine == "sglang":
        return bench
    return for_server(bench, found.info.engine, api="auto" if bench.api == "generate" else bench.api,
                      model=found.model, name_no_model=found.name_no_model)


def is_sim_command(server) -> bool:
    """A server command that runs the built-in simulator has simulated GPUs."""
    return server is not None and "tuiapp.sim.server" in server.argv


async def _flush_cache(url: str, client) -> None:
    """``client``: the trial's client of the server (it carries the API key)."""
    import httpx

    try:
        await client.post(f"{url}/flush_cache", timeout=10.0)
    except httpx.HTTPError:
        pass  # an old or attached server without /flush_cache still gives a result
