"""One trial as one Slurm job: the runner's ``_launch_and_bench`` with sbatch in place of a
local process. Preflight, the benchmark, the collector and the ledger row are the runner's own.

Submit -> queued -> running -> the batch script writes endpoint.json -> every node's log is
followed under the node's name (incidents carry node and ranks; NodeMerger joins one failure
seen on several nodes) -> ``/health`` of the head (or the plan's ``url``) -> warm-up and runs.
On the first fatal incident the job is cancelled at once (scancel) and the trial is recorded
with it; a trial that ends normally asks its job to stop (the ``stop`` file: the server gets
SIGTERM and the job ends COMPLETED).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import sys
import time
from pathlib import Path

from tuiapp.common.task_stop import stop_tasks
from tuiapp.events import Alert, Note, RequestDone, RunDone, ServerState, TrialJob, _Event
from tuiapp.slurm.jobs import Slurm, slurm_command
from tuiapp.slurm.query import JobInfo, SlurmError
from tuiapp.slurm.script import ENDPOINT_COMMENT, JobFiles, batch_script, node_script, safe_name
from tuiapp.trials.runner import PlanRunner, _flush_cache, _publish_server_info
from tuiapp.trials.slurm_spec import SlurmSpec

# what ends a trial at once: the server cannot go on (warnings, request errors and KV pressure
# are findings of a run that goes on)
FATAL_KINDS = {"oom", "assertion", "keyerror", "jit_arch", "nccl", "crash", "hang", "cuda_fault",
               "gpu_lost", "xid", "ep_bootstrap"}
STOP_WAIT_S = 30.0  # a job asked to stop that is still there after this is cancelled
LEASE_TOUCH_S = 10.0
HEALTH_POLL_S = 0.5
ENDPOINT_POLL_S = 0.1  # a stat of one file on the shared filesystem


def is_fatal(event: _Event) -> bool:
    return isinstance(event, Alert) and event.severity == "error" and event.alert_kind in FATAL_KINDS


def node_tail_command(job_id: str, node: str, node_dir: str) -> str:
    """``tail -F`` of a node's log, run on that node inside the job (no shared filesystem)."""
    path = f"{node_dir}/node-{node}.log"
    return (f"srun --jobid={shlex.quote(job_id)} --overlap -N1 -n1 -w {shlex.quote(node)} --quiet "
            f"tail -n +1 -F {shlex.quote(path)}")


def endpoint_from_comment(info: JobInfo | None) -> dict | None:
    """The endpoint a job without a shared filesystem puts in its Comment."""
    if info is None or not info.comment or not info.comment.startswith(ENDPOINT_COMMENT):
        return None
    try:
        return json.loads(info.comment[len(ENDPOINT_COMMENT):])
    except ValueError:
        return None


def job_dir_name(trial: str, stamp: float) -> str:
    return safe_name(trial) + f"-{int(stamp * 1000) % 10**9}"


class SlurmTrial(PlanRunner):
    """One trial's job; the campaign's runner makes one per trial, so several run at once."""

    def __init__(self, parent: PlanRunner, slurm: Slurm, spec: SlurmSpec, job_root: Path) -> None:
        super().__init__(parent.plan, parent.trials, parent.ledger, parent.options)
        self.slurm = slurm
        self.spec = spec
        self.job_root = job_root
        self.files: JobFiles | None = None
        self.job_id: str | None = None
        self.info: JobInfo | None = None
        self.cancel_reason: str | None = None
        self.submitted_s: float | None = None  # monotonic
        self.running_s: float | None = None
        self.ready_s: float | None = None
        self.first_token_s: float | None = None
        self.fatal_s: float | None = None  # the first fatal alert
        self.cancelled_s: float | None = None  # scancel returned
        self.endpoint: dict | None = None
        self._fatal = asyncio.Event()
        self.interrupted = False
        self.alert_id_base = 0  # added to this trial's alert ids (the campaign's runner sets it)
        # the campaign view's row (TrialJob), published when it changes
        self.trial_name = ""
        self.url: str | None = None
        self.runs = 0
        self.decode_tok_s: float | None = None
        self.incident_ids: set[int] = set()
        self.last_incident: str | None = None
        self._shown_job: TrialJob | None = None
        self._publish = None

    # ------------------------------------------------------------ controls

    def stop_server(self) -> None:
        self._user_stopped = True
        if self.job_id is not None:
            self._spawn(self.slurm.cancel(self.job_id))
        self._fatal.set()  # wakes the trial, which sees it was the user

    async def shutdown(self) -> None:
        if self.bench is not None:
            self.bench.stop()
        if self.job_id is not None:
            await self.slurm.cancel(self.job_id)

    def _preflight_problems(self, argv: list[str]) -> list:
        """On this host as for a local trial, or as a short job on a node."""
        if self.spec.preflight != "job":
            return super()._preflight_problems(argv)
        from tuiapp.logwatch.verdict import worst_failure
        from tuiapp.slurm.preflight import job_preflight

        return job_preflight(argv, self.spec, classify=worst_failure)

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ the job

    async def _launch_and_bench(self, cfg, argv, url, api_key, observe, state, collector) -> str:
        from tuiapp.bench.loop import BenchLoop
        from tuiapp.common.http_clients import ServerClient
        from tuiapp.logwatch.nodes import NodeMerger
        from tuiapp.server.metrics_poll import run_metrics_poller

        files = JobFiles(self.job_root / job_dir_name(cfg.name, time.time()))
        self.files = files
        helpers: list[asyncio.Task] = []
        stop_logs = asyncio.Event()
        http: ServerClient | None = None
        why_fatal: list[Alert] = []

        self.trial_name, self._publish = cfg.name, observe

        def watch(event: _Event) -> None:
            if isinstance(event, Alert) and self.alert_id_base:
                event = event.model_copy(update={
                    "alert_id": event.alert_id + self.alert_id_base if event.alert_id else 0,
                    "caused_by": event.caused_by + self.alert_id_base if event.caused_by else None})
            observe(event)
            if isinstance(event, RunDone):
                self.runs += 1
                self.decode_tok_s = event.decode_tok_s
                self.publish_job()
            elif isinstance(event, Alert) and event.severity == "error" and event.alert_id not in self.incident_ids:
                self.incident_ids.add(event.alert_id)
                ranks = ",".join(map(str, event.ranks))
                self.last_incident = (f"{event.alert_kind}" + (f" on {','.join(event.nodes)}" if event.nodes else "")
                                      + (f" ranks {ranks}" if ranks else ""))
                self.publish_job()
            if self.first_token_s is None and isinstance(event, RequestDone) and event.ok:
                self.first_token_s = time.monotonic() - (event.e2e_s or 0.0) + (event.ttft_s or 0.0)
            if is_fatal(event) and not self._fatal.is_set():
                # fail fast: the job goes now, not at its time limit
                self.fatal_s = time.monotonic()
                why_fatal.append(event)
                where = " on " + ",".join(event.nodes) if event.nodes else ""
                self.cancel_reason = f"cancelled by tuiapp: {event.alert_kind}{where}: {event.message}"[:300]
                self._fatal.set()
                if self.job_id is not None:
                    self._spawn(self._cancel_now())

        try:
            files.dir.mkdir(parents=True, exist_ok=True)
            files.node_script.write_text(node_script(argv, self.spec, files), encoding="utf-8")
            files.script.write_text(batch_script(argv, cfg.env, self.spec, files, job_name=f"tuiapp-{safe_name(cfg.name)}",
                                                 agent_argv=self._agent_argv(url)), encoding="utf-8")
            files.lease.write_text("0", encoding="utf-8")
        except OSError as exc:
            return f"launch_error:job directory {files.dir}: {exc.strerror or exc}"
        state("launching", f"sbatch {files.script}")
        self.submitted_s = time.monotonic()
        try:
            self.job_id = await self.slurm.submit(files.script)
        except SlurmError as exc:
            return f"launch_error:{exc}"
        observe(ServerState(state="starting", message=f"Slurm job {self.job_id} submitted ({files.dir})"))
        self.publish_job()
        if self.spec.shared_fs:
            helpers.append(asyncio.create_task(self._touch_lease(files)))
        try:
            if not await self._wait_running(cfg, state):
                return "stopped" if self._user_stopped else "not_ready"
            self.endpoint = await self._wait_endpoint(files, cfg)
            if self.endpoint is None:
                return "stopped" if self._user_stopped else "not_ready"
            nodes = [str(n) for n in self.endpoint.get("nodes") or []]
            merger = NodeMerger(watch)
            for node in nodes:
                helpers.append(asyncio.create_task(self._follow(node, merger.publisher(node), stop_logs)))
            url = self.spec.url or f"http://{self.endpoint['head_addr']}:{self.endpoint['port']}"
            self.url = url
            self.publish_job()
            http = ServerClient(url, api_key)
            helpers += self._telemetry(observe, nodes, url, http)
            state("launching", f"job {self.job_id} running on {','.join(nodes)}; waiting for {url}/health")
            if not await self._wait_ready(cfg, http, url, observe, collector):
                return "stopped" if self._user_stopped else ("died" if why_fatal else "not_ready")
            await _publish_server_info(observe, url, api_key, http.aio)
            helpers.append(asyncio.create_task(run_metrics_poller(observe, url, api_key=api_key, client=http.aio)))
            state("warming_up", f"job {self.job_id}")
            bench = BenchLoop(watch, url, cfg.bench, api_key=api_key, trial=cfg.name)
            self.bench = bench
            bench_task = asyncio.create_task(bench.run())
            helpers.append(bench_task)  # (an interrupt leaves it running: the finally below ends it)
            ended = asyncio.create_task(self._wait_over())
            fatal = asyncio.create_task(self._fatal.wait())
            done, _ = await asyncio.wait({bench_task, ended, fatal}, timeout=cfg.timeouts.run_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            collector.benchmarking = False
            outcome = "ok"
            if bench_task not in done:
                bench.stop()
                bench_task.cancel()
                await asyncio.gather(bench_task, return_exceptions=True)
                if self._user_stopped:
                    outcome = "stopped"
                else:
                    outcome = "died" if (ended in done or fatal in done) else "run_timeout"
                if outcome != "died":
                    collector.stopped()  # a run timeout or a stop: what the job prints as it ends is ours
            elif (exc := bench_task.exception()) is not None:
                observe(Note(level="error", text=f"{cfg.name}: benchmark failed: {exc!r}", source="trials"))
            for task in (ended, fatal):
                task.cancel()
            collector.runs = list(bench.results)
            if outcome == "ok":
                await _flush_cache(url, http.aio)
            return outcome
        except asyncio.CancelledError:
            self.interrupted = True  # Ctrl-C, quit, a hang-up: the job goes now, not cleanly
            raise
        finally:
            if self.bench is not None:
                # first, as a local trial does: the requests the job's end cuts (a Ctrl-C, a quit)
                # are then ours, cancelled, never failures that judge the trial or a probe
                self.bench.stop()
            state("stopping", f"job {self.job_id}" if self.job_id else "")
            await self._end_job(files)
            await asyncio.sleep(0.3)  # the last lines of the node logs reach their watchers
            stop_logs.set()
            for task in helpers:
                if task.get_name() != "log":
                    task.cancel()
            # two waits, two jobs: the node logs' followers drain to the end of their files (stop_logs),
            # then whatever is still running is cancelled and given stop_tasks' grace
            await asyncio.wait(helpers, timeout=5.0) if helpers else None
            await stop_tasks(helpers)
            if http is not None:
                await http.aclose()
            if self.info is not None:
                self.returncode = self.info.exit_code
                observe(ServerState(state="stopped" if self.info.state == "COMPLETED" else "failed",
                                    exit_code=self.info.exit_code,
                                    message=f"Slurm job {self.job_id}: {self.info.state}"))

    def publish_job(self) -> None:
        """The campaign view's row of this trial, when anything in it changed."""
        if self._publish is None or self.job_id is None:
            return
        info = self.info
        state = info.state if info is not None else "PENDING"
        reason = self.cancel_reason if self.cancel_reason and info is not None and info.over else (
            info.reason if info is not None else None)
        event = TrialJob(trial=self.trial_name, job_id=self.job_id, state=state,
                         nodes=list(info.nodes) if info is not None else [], reason=reason,
                         queue_wait_s=info.queue_wait_s if info is not None else None, url=self.url,
                         decode_tok_s=self.decode_tok_s, runs=self.runs, incidents=len(self.incident_ids),
                         last_incident=self.last_incident)
        shown = self._shown_job
        if shown is not None and shown.model_dump(exclude={"t_s"}) == event.model_dump(exclude={"t_s"}):
            return
        self._shown_job = event
        self._publish(event)

    async def _cancel_now(self) -> None:
        await self.slurm.cancel(self.job_id)
        self.cancelled_s = time.monotonic()

    async def _touch_lease(self, files: JobFiles) -> None:
        """The job's sign that this tuiapp is alive (tuiapp.slurm.script)."""
        beat = 0
        while True:
            beat += 1
            with contextlib.suppress(OSError):
                files.lease.write_text(str(beat), encoding="utf-8")
            await asyncio.sleep(min(LEASE_TOUCH_S, self.spec.lease_s / 3))

    async def _wait_running(self, cfg, state) -> bool:
        """Queued until Slurm starts it; False when it ended first or the user gave up. The
        batch script's endpoint.json says "running" before the next squeue poll can."""
        shown = None
        assert self.files is not None
        while not self._fatal.is_set():
            if self.spec.shared_fs and self.files.endpoint.exists():
                self.running_s = time.monotonic()
                return True
            info = self.slurm.latest(self.job_id)
            if info is None or info is self.info:
                await asyncio.sleep(ENDPOINT_POLL_S)
                continue
            self.info = info
            self.publish_job()
            if info.over:
                return False
            if info.state in ("RUNNING", "COMPLETING"):
                self.running_s = time.monotonic()
                return True
            text = f"job {self.job_id} {info.state.lower()}" + (f" ({info.reason})" if info.reason else "")
            if text != shown:
                state("launching", text)
                shown = text
        return False

    async def _wait_endpoint(self, files: JobFiles, cfg) -> dict | None:
        deadline = time.monotonic() + cfg.timeouts.ready_s
        while time.monotonic() < deadline and not self._fatal.is_set():
            if self.spec.shared_fs:
                try:
                    return json.loads(files.endpoint.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    pass
            elif (endpoint := endpoint_from_comment(self.slurm.latest(self.job_id))) is not None:
                return endpoint
            info = self.slurm.latest(self.job_id)
            if info is not None and info.over:
                return None
            await asyncio.sleep(ENDPOINT_POLL_S)
        return None

    async def _wait_ready(self, cfg, http, url: str, observe, collector) -> bool:
        import httpx

        deadline = (self.running_s or time.monotonic()) + cfg.timeouts.ready_s
        while time.monotonic() < deadline and not self._fatal.is_set():
            info = self.slurm.latest(self.job_id)
            if info is not None and info.over:
                return False
            try:
                if (await http.aio.get(f"{url}/health", timeout=5.0)).status_code == 200:
                    self.ready_s = time.monotonic()
                    self.startup_s = self.ready_s - (self.running_s or self.ready_s)
                    observe(ServerState(state="ready", url=url, startup_s=self.startup_s,
                                        message=f"ready (/health; Slurm job {self.job_id})"))
                    return True
            except httpx.HTTPError:
                pass
            await asyncio.sleep(HEALTH_POLL_S)
        if not self._fatal.is_set():
            collector.stopped()  # a ready timeout: the job we cancel now did not fail
            observe(ServerState(state="failed", message=f"not ready after {cfg.timeouts.ready_s:g} s"))
        return False

    async def _wait_over(self) -> None:
        while True:
            info = self.slurm.latest(self.job_id)
            if info is not None:
                self.info = info
                self.publish_job()
            if info is not None and info.over:
                return
            await self.slurm.next_round()

    async def _end_job(self, files: JobFiles) -> None:
        """A job no longer needed ends: cancelled at once after a fatal incident or when the
        trial never got going, else asked to stop cleanly; then its final state is read."""
        if self.job_id is None:
            return
        info = self.slurm.latest(self.job_id)
        if info is None or not info.over:
            if self._fatal.is_set() or self.ready_s is None or self.interrupted:
                await self._cancel_now()
            elif self.spec.shared_fs:
                with contextlib.suppress(OSError):
                    files.stop.touch()
            else:  # the batch script traps it and ends the server step: COMPLETED
                with contextlib.suppress(SlurmError):
                    await slurm_command("scancel", "--batch", "--signal=USR1", self.job_id)
            try:
                await asyncio.wait_for(self._wait_over(), STOP_WAIT_S)
            except asyncio.TimeoutError:
                await self._cancel_now()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wait_over(), STOP_WAIT_S)
        self.info = self.slurm.latest(self.job_id) or self.info
        self.publish_job()

    async def _follow(self, node: str, publish, stop: asyncio.Event) -> None:
        """One node's log under its name: the file in the shared job directory, or, without a
        shared filesystem, ``tail -F`` of the node's own file through ``srun --overlap``."""
        from tuiapp.logwatch.follow import follow_file
        from tuiapp.logwatch.sources import follow_command
        from tuiapp.logwatch.watcher import LogWatcher

        assert self.files is not None and self.endpoint is not None
        watcher = LogWatcher(publish, ready_events=False)
        asyncio.current_task().set_name("log")
        if self.spec.shared_fs:
            await follow_file(self.files.node_log(node), publish, from_start=True, stop=stop, watcher=watcher)
        else:
            await follow_command(node_tail_command(self.job_id, node, str(self.endpoint.get("dir") or "")),
                                 publish, stop=stop, node=node, watcher=watcher)
        watcher.flush()

    # ------------------------------------------------------------ GPUs per node

    def _agent_argv(self, url: str) -> list[str] | None:
        """tuiapp's GPU sampler on every node (no dcgm-exporter named): JSON lines back
        through the shared job directory."""
        if self.spec.dcgm or not self.spec.gpu_agent or self.options.telemetry == "off" or not self.spec.shared_fs:
            return None  # without a shared filesystem its files stay on the nodes: name dcgm instead
        # --sim: the simulator's GPUs on each node, through the same agent and files
        sim = self.options.sim_speed is not None or self.options.telemetry == "sim"
        return [self.spec.python or sys.executable, "-m", "tuiapp.slurm.gpu_agent",
                "--interval-s", f"{self.options.gpu_interval_s:g}", "--telemetry", "sim" if sim else "nvml"]

    def _telemetry(self, observe, nodes: list[str], url: str, http) -> list[asyncio.Task]:
        from tuiapp.telemetry import run_telemetry

        if self.options.telemetry == "off":
            return []
        if self.spec.dcgm:
            urls = [self.spec.dcgm.format(node=node) for node in nodes]
            return [asyncio.create_task(run_telemetry(observe, "dcgm", dcgm_urls=urls,
                                                      interval_s=self.options.gpu_interval_s))]
        if self._agent_argv(url) is None:
            if self.options.sim_speed is not None or self.options.telemetry == "sim":
                # no agent (no shared filesystem): the head's simulated GPUs, over HTTP from here
                return [asyncio.create_task(run_telemetry(observe, "sim", sim_url=url, sim_client=http.sync,
                                                          interval_s=self.options.gpu_interval_s))]
            return []
        from tuiapp.slurm.gpu_agent import follow_samples

        assert self.files is not None
        return [asyncio.create_task(follow_samples(self.files.gpu_samples(node), node, observe))
                for node in nodes]

