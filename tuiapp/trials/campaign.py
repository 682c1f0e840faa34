"""A plan as a session: the runner is the one source, TrialsControls its live controls;
headless or TUI as the caller says.

``tuiapp trials`` and ``tuiapp demo`` both build it here, so the demo runs the very path
a real plan takes.
"""

from __future__ import annotations

from pathlib import Path

from tuiapp.session import Session
from tuiapp.trials.ledger import Ledger
from tuiapp.trials.plan import Plan, TrialConfig
from tuiapp.trials.runner import PlanRunner, RunnerOptions


class TrialsControls:
    owns_server = True

    def __init__(self, runner: PlanRunner) -> None:
        self.runner = runner

    def pause_bench(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.pause()

    def resume_bench(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.resume()

    def restart_trial(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.restart()

    def stop_server(self) -> None:
        """Skip the current trial (not recorded, so --resume runs it again)."""
        self.runner.stop_server()

    def focus_trial(self, name: str | None) -> bool:
        """Show this trial on the dashboard, where several run at once (trials --slurm); False
        where the runner runs one trial at a time."""
        set_focus = getattr(self.runner, "set_focus", None)
        if set_focus is None:
            return False
        set_focus(name)
        return True


def build_trials_session(plan: Plan, trials: list[TrialConfig], ledger: Ledger, options: RunnerOptions,
                         *, title: str | None = None, record_path: Path | None = None,
                         runner_class: type[PlanRunner] = PlanRunner,
                         **runner_kwargs) -> tuple[Session, PlanRunner]:
    """The session that runs ``trials``: it ends after the last trial, exit code 1 when the
    first trial (the reference of the rest) failed, else 0 (the TUI stays up after that, so
    the ledger can be read). Run it with ``tuiapp.commands.frontend.run(session, headless=...)``."""
    box: list[Session] = []

    def done(code: int) -> None:
        box[0].finish(code)

    runner = runner_class(plan, trials, ledger, options, on_done=done, **runner_kwargs)
    session = Session(
        title=title or f"trials: {plan.name}", sources=[runner.run], controls=TrialsControls(runner),
        record_path=record_path,
        header={"mode": "trials", "plan": str(plan.path), "trials": [t.name for t in trials],
                "sim": options.sim_speed is not None},
        on_stop=runner.shutdown,
    )
    box.append(session)
    return session, runner


def ledger_report(ledger: Ledger, plan: Plan | None = None) -> str:
    """What a finished plan prints: the Markdown ledger and its confound warnings; for a
    [search], the best configuration as a command line ready to launch."""
    lines = [ledger.to_markdown().rstrip("\n")]
    # a trial attributed by --isolate in this ledger has had its answer: no more warning
    lines += [f"warning: {row.confound}" for row in ledger.rows.values()
              if row.confound and row.isolates != row.name]
    if plan is not None and plan.search is not None:
        lines += best_configuration(ledger, plan)
    lines += slurm_job_lines(ledger)
    return "\n".join(lines)


def slurm_job_lines(ledger: Ledger) -> list[str]:
    """trials --slurm: each row's job, where it ran, how long it queued and how it ended."""
    from tuiapp.common.numfmt import num

    rows = [r for r in ledger.rows.values() if r.slurm_job_id]
    if not rows:
        return []
    out = ["Slurm jobs:"]
    for r in rows:
        out.append(f"  {r.name}: job {r.slurm_job_id} {r.slurm_state or 'n/a'} on {','.join(r.slurm_nodes) or '-'}, "
                   f"queued {num(r.slurm_queue_wait_s, '.0f')} s" + (f"; {r.slurm_reason}" if r.slurm_reason else ""))
    return out


def best_configuration(ledger: Ledger, plan: Plan) -> list[str]:
    import shlex

    from tuiapp.common.redact import redact_argv

    ranked = ledger.rank(plan.search.objective)
    if not ranked:
        return ["search: no combination finished a benchmark"]
    best = ranked[0]
    cfg = plan.get(best.name)
    tied = [r.name for r in ranked[1:] if r.vs_best == "within noise"]
    from tuiapp.common import stats
    from tuiapp.trials.ledger import objective_values

    figure = stats.mean(objective_values(best, plan.search.objective))
    lines = [f"best by {plan.search.objective}: {best.name} ({figure:.2f})"
             + (f"; within noise of it: {', '.join(tied)}" if tied else "")]
    if cfg is not None:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in cfg.env.items())
        lines.append("launch it: " + (env + " " if env else "") + shlex.join(redact_argv(cfg.argv())))
    return lines
