"""A plan on Slurm: every trial one job, at most ``[slurm] in_flight`` of them queued or
running at once, each through ``SlurmTrial``; the ledger, verdicts and ``--resume`` are the
plan runner's. Rows keep the plan's order whatever order the jobs finish in.

Whatever ends the campaign (its last trial, Ctrl-C, a hang-up of the dashboard, an error)
cancels every job it submitted that is still queued or running; a job whose tuiapp was killed
outright cancels itself when its lease goes stale (tuiapp.slurm.script).
"""

from __future__ import annotations

import asyncio
import atexit
import time
from pathlib import Path

from tuiapp.bus import EventBus
from tuiapp.events import (
    Alert,
    BenchState,
    BenchSummary,
    GpuSample,
    HostSample,
    LogLine,
    Note,
    PointDone,
    RequestDone,
    RunDone,
    ServerInfo,
    ServerState,
    ServerStats,
    TrialResult,
    TrialState,
)
from tuiapp.slurm.jobs import Slurm
from tuiapp.slurm.trial import SlurmTrial
from tuiapp.trials.diff import config_diff, confound_warning
from tuiapp.trials.ledger import OK, LedgerRow
from tuiapp.trials.runner import PlanRunner
from tuiapp.trials.slurm_spec import SlurmSpec

ALERT_ID_STRIDE = 1_000_000
# one trial's server and benchmark: with a focus, only the focused trial's reach the dashboard
SERVER_EVENTS = (LogLine, RequestDone, GpuSample, HostSample, ServerStats, ServerState, ServerInfo, BenchState,
                 RunDone, PointDone, BenchSummary, Alert, TrialState)


def job_root_for(options, spec: SlurmSpec) -> Path:
    """``[slurm] job_dir``, else next to the ledger, else ./tuiapp-slurm (relative paths from
    where tuiapp runs: it must be on a filesystem the nodes share)."""
    if spec.job_dir:
        return Path(spec.job_dir).expanduser().resolve()
    if options.ledger_path is not None:
        return options.ledger_path.resolve().with_name(options.ledger_path.stem + ".slurm")
    return Path("tuiapp-slurm").resolve()


class SlurmPlanRunner(PlanRunner):
    def __init__(self, *args, spec: SlurmSpec, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spec = spec
        self.slurm = Slurm()
        self.job_root = job_root_for(self.options, spec)
        self.in_flight: dict[str, SlurmTrial] = {}  # trial name -> its job, while it runs
        self.focus: str | None = None  # the trial the dashboard shows (the campaign view's Enter)
        self._last_state: dict[str, TrialState] = {}
        self._bus: EventBus | None = None
        atexit.register(self.slurm.cancel_all_now)

    def set_focus(self, name: str | None, bus: EventBus | None = None) -> None:
        """Show one trial's server on the dashboard (None: every trial's events, mixed). The
        focused trial's last state is published again, so the dashboard starts on it."""
        self.focus = name
        bus = bus or self._bus
        if name is not None and bus is not None and name in self._last_state:
            last = self._last_state[name]
            bus.publish(last.model_copy(update={"t_s": time.time()}))

    def _publisher(self, name: str, bus: EventBus):
        """What a trial publishes: all of it without a focus; with one, another trial's server
        events (log, requests, GPUs, runs, alerts, its states) stay out of the dashboard and the
        recording, while its row, job, result and notes go through."""
        def publish(event) -> None:
            if isinstance(event, TrialState):
                self._last_state[name] = event
            if self.focus is None or self.focus == name or not isinstance(event, SERVER_EVENTS):
                bus.publish(event)
        return publish

    @property
    def bench(self):
        """The focused trial's benchmark (the dashboard's pause and restart act on it)."""
        trial = self.in_flight.get(self.focus) if self.focus else None
        return trial.bench if trial is not None else None

    @bench.setter
    def bench(self, _value) -> None:  # the plan runner's own slot: each trial keeps its bench
        pass

    def stop_server(self) -> None:
        """Skip the focused trial, or every trial in flight without a focus (not recorded:
        --resume runs them again)."""
        focused = self.in_flight.get(self.focus) if self.focus else None
        for trial in [focused] if focused is not None else list(self.in_flight.values()):
            trial.stop_server()

    async def shutdown(self) -> None:
        for trial in list(self.in_flight.values()):
            if trial.bench is not None:
                trial.bench.stop()
        await self.slurm.cancel_all()
        await self.slurm.close()

    async def run(self, bus: EventBus) -> None:
        self._bus = bus
        total = len(self.trials)
        for cfg in self.trials:
            changes = config_diff(self.plan.reference(cfg), cfg)
            warning = confound_warning(cfg.name, changes, self.plan.knob_groups)
            if warning and cfg.isolates != cfg.name and not self._resumed(cfg) and not self._searched(cfg):
                bus.publish(Note(level="warning", text=warning, source="trials"))
        bus.publish(Note(level="info", source="slurm",
                         text=f"{total} trials as Slurm jobs, {self.spec.in_flight} in flight; job files in {self.job_root}"))
        started = time.monotonic()
        budget_s = self.plan.search.budget_s if self.plan.search is not None else None
        slots = asyncio.Semaphore(self.spec.in_flight)
        order = [t.name for t in self.trials]

        async def one(index: int, cfg) -> None:
            async with slots:
                if budget_s is not None and self._searched(cfg) and time.monotonic() - started >= budget_s:
                    bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                           message=f"the search's budget of {budget_s:g} s is spent"))
                    return
                trial = SlurmTrial(self, self.slurm, self.spec.for_trial(cfg.slurm), self.job_root)
                # alert ids are each watcher's own: trials in flight side by side must not share them
                trial.alert_id_base = (index + 1) * ALERT_ID_STRIDE
                self.in_flight[cfg.name] = trial
                try:
                    row = await trial.run_trial(cfg, index, total, self._publisher(cfg.name, bus))
                finally:
                    self.in_flight.pop(cfg.name, None)
                if row is None:
                    bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                           message="stopped by the user"))
                    return
                fill_slurm_fields(row, trial)
                self.ledger.add(row)
                self.ledger.rows = {n: self.ledger.rows[n] for n in sorted(
                    self.ledger.rows, key=lambda n: order.index(n) if n in order else -1)}
                if self.plan.search is not None:
                    self.ledger.rank(self.plan.search.objective)
                self._save(bus)
                final = self.ledger.rows[row.name]
                bus.publish(TrialResult(name=final.name, status=final.status, row=final.model_dump(mode="json")))

        tasks = []
        for index, cfg in enumerate(self.trials):
            if self._resumed(cfg):
                bus.publish(TrialState(name=cfg.name, index=index, total=total, phase="skipped",
                                       message="already in the ledger"))
                continue
            if self.options.resume and self.ledger.done(cfg.name):
                bus.publish(Note(level="warning", source="trials",
                                 text=f"{cfg.name}: configuration changed since its ledger row; running it again"))
            tasks.append(asyncio.create_task(one(index, cfg)))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.slurm.cancel_all()
            await self.slurm.close()
        for line in self.ledger.attribution():
            bus.publish(Note(level="info", text=f"attribution: {line}", source="trials"))
        first = self.ledger.rows.get(self.trials[0].name) if self.trials else None
        if self.on_done is not None:
            self.on_done(0 if first is not None and first.status == OK else 1)


def fill_slurm_fields(row: LedgerRow, trial: SlurmTrial) -> None:
    """The job behind a row: id, nodes, queue wait, Slurm's final state, why tuiapp ended it."""
    row.slurm_job_id = trial.job_id
    info = trial.info
    if info is not None:
        row.slurm_state = info.state
        row.slurm_nodes = list(info.nodes)
        row.slurm_queue_wait_s = info.queue_wait_s
    if trial.cancel_reason is not None:
        row.slurm_reason = trial.cancel_reason
    if trial.fatal_s is not None and trial.cancelled_s is not None:
        row.slurm_cancel_after_alert_s = round(trial.cancelled_s - trial.fatal_s, 3)
    if trial.submitted_s is not None and trial.first_token_s is not None:
        row.slurm_submit_to_first_token_s = round(trial.first_token_s - trial.submitted_s, 3)
    if row.status == "crash" and info is not None and info.state in ("TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
        # no log line said why: Slurm did
        row.status = "timeout" if info.state == "TIMEOUT" else "crash"
        row.first_error = f"Slurm: {info.state}" + (f" ({info.reason})" if info.reason else "")
