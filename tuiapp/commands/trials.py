"""tuiapp trials: run a plan of server configurations and keep a ledger of what each proved."""

from __future__ import annotations

import argparse

from tuiapp.commands import metrics_args, screenshots

HELP = "run a plan of trials (baseline + variations) and write a ledger with verdicts"

DEFAULT_SIM_SPEED = 20.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", nargs="?", default="campaign",
                        help="plan file (TOML), or the name of a shipped plan (default: campaign, "
                             "the reference campaign)")
    parser.add_argument("--headless", action="store_true", help="plain lines on stdout, no TUI")
    parser.add_argument("--record", metavar="FILE", help="record every event to FILE (JSONL)")
    parser.add_argument("--ledger", metavar="FILE", help="write the ledger as JSON, after every trial")
    parser.add_argument("--ledger-md", metavar="FILE", help="also write it as Markdown")
    parser.add_argument("--ledger-csv", metavar="FILE", help="also write it as CSV")
    parser.add_argument("--resume", action="store_true",
                        help="skip trials already in the --ledger file (failed ones included)")
    parser.add_argument("--isolate", metavar="TRIAL",
                        help="run TRIAL's reference, each single knob of TRIAL's diff alone on it, then "
                             "TRIAL, and attribute TRIAL's difference knob by knob")
    parser.add_argument("--only", metavar="NAME", nargs="+", help="run only these trials (and the trials they are compared with)")
    parser.add_argument("--sim", action="store_true",
                        help="run every server through the built-in simulator (no GPU, no SGLang)")
    parser.add_argument("--sim-speed", type=float, default=DEFAULT_SIM_SPEED, metavar="X",
                        help=f"with --sim: start-up and failures happen X times faster; decode pacing "
                             f"stays real (default {DEFAULT_SIM_SPEED:g})")
    parser.add_argument("--telemetry", choices=["auto", "nvml", "sim", "off"], default="auto",
                        help="GPU sampler for each trial (default: nvml, or sim with --sim)")
    parser.add_argument("--log-dir", metavar="DIR",
                        help="keep each trial's server log in DIR (default: next to --ledger)")
    parser.add_argument("--check", action="store_true",
                        help="validate the plan, print each trial's diff against the baseline, run nothing")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the trials that would run, one per line with their flags, and run nothing")
    parser.add_argument("--slurm", action="store_true",
                        help="run every trial as a Slurm job (sbatch), as the plan's [slurm] table says; "
                             "docs/slurm.md")
    parser.add_argument("--theme", help="TUI theme")
    screenshots.add_argument(parser)
    metrics_args.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuiapp.common.errors import UsageError
    from tuiapp.trials.isolate import isolate_trials
    from tuiapp.trials.ledger import Ledger
    from tuiapp.trials.plan import PlanError, load_plan
    from tuiapp.trials.plans import plan_path

    try:
        plan = load_plan(plan_path(args.plan))
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    if args.isolate and args.only:
        raise UsageError("--isolate and --only cannot be combined")
    if args.resume and not args.ledger:
        raise UsageError("--resume needs --ledger FILE (the ledger to resume)")
    if not 0 < args.sim_speed < float("inf"):  # "nan" and "inf" parse as floats too
        raise UsageError("--sim-speed must be > 0")
    for flag, value in (("--ledger", args.ledger), ("--ledger-md", args.ledger_md), ("--ledger-csv", args.ledger_csv)):
        if value and Path(value).is_dir():  # found now, not when the first trial's row is saved
            raise UsageError(f"{flag} {value}: is a directory, not a file")

    names = [t.name for t in plan.all()]
    if args.isolate:
        try:
            trials = isolate_trials(plan, args.isolate)
        except KeyError:
            raise UsageError(f"--isolate {args.isolate}: no such trial (trials: {', '.join(names[1:])})") from None
        except ValueError as exc:
            raise UsageError(f"--isolate: {exc}") from None
    elif args.only:
        unknown = [n for n in args.only if n not in names]
        if unknown:
            raise UsageError(f"--only: no trial named {unknown[0]!r} (trials: {', '.join(names)})")
        trials = plan.with_references(args.only)
    else:
        trials = plan.all()

    slurm_spec = None
    if args.slurm:
        from tuiapp.trials.slurm_spec import SlurmSpec

        slurm_spec = plan.slurm or SlurmSpec()
    if args.check:
        print(_check_text(plan, trials))
        return 0

    ledger = Ledger(min_effect_pct=plan.min_effect_pct)
    ledger_path = Path(args.ledger) if args.ledger else None
    if args.resume and ledger_path is not None and ledger_path.exists():
        try:
            ledger = Ledger.load(ledger_path, min_effect_pct=plan.min_effect_pct)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.dry_run:
        print(_dry_run_text(trials, ledger if args.resume else None, slurm_spec))
        return 0

    log_dir = Path(args.log_dir) if args.log_dir else (
        ledger_path.with_name(ledger_path.stem + ".logs") if ledger_path else None)
    if slurm_spec is not None:
        from tuiapp.slurm.preflight import check_slurm

        check_slurm()  # the client commands answer before anything is submitted
    return _run_session(args, plan, trials, ledger, ledger_path, log_dir, slurm_spec)


def host_samples_wanted(args: argparse.Namespace) -> bool:
    """Whether anything shows or keeps host samples: the dashboard and recordings do, the
    headless printer does not."""
    return not args.headless or bool(args.record)


def _run_session(args, plan, trials, ledger, ledger_path, log_dir, slurm_spec=None) -> int:
    from pathlib import Path

    from tuiapp.commands.frontend import run as run_session
    from tuiapp.trials.campaign import build_trials_session, ledger_report
    from tuiapp.trials.runner import RunnerOptions

    options = RunnerOptions(
        ledger_path=ledger_path, ledger_md=Path(args.ledger_md) if args.ledger_md else None,
        ledger_csv=Path(args.ledger_csv) if args.ledger_csv else None, resume=args.resume,
        sim_speed=args.sim_speed if args.sim else None, telemetry=args.telemetry, log_dir=log_dir,
        host_samples=host_samples_wanted(args),
    )
    title = f"trials: {plan.name}" + (f" --isolate {args.isolate}" if args.isolate else "")
    extra = {}
    if slurm_spec is not None:
        from tuiapp.slurm.runner import SlurmPlanRunner

        title += " (Slurm)"
        extra = {"runner_class": SlurmPlanRunner, "spec": slurm_spec}
    session, _runner = build_trials_session(
        plan, trials, ledger, options, title=title,
        record_path=Path(args.record) if args.record else None, **extra)
    session.metrics = metrics_args.start(args)
    code = run_session(session, headless=args.headless, theme=args.theme, screenshot_dir=args.screenshot_dir)
    if ledger.rows:
        print()
        print(ledger_report(ledger, plan))
    if ledger_path is not None:
        print(f"ledger: {ledger_path}")
    return code


def _dry_run_text(trials, ledger, slurm_spec=None) -> str:
    """One line per trial that would run: its name, then its command line (and env); with
    --slurm, its sbatch options and what each node would run."""
    import shlex
    from pathlib import Path

    from tuiapp.common.redact import redact_argv

    lines = []
    for t in trials:
        if ledger is not None and ledger.done(t.name, t.fingerprint()):
            continue  # --resume: already measured
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in t.env.items())
        lines.append(f"{t.name}: " + (env + " " if env else "") + shlex.join(redact_argv(t.argv())))
        if slurm_spec is not None:
            from tuiapp.slurm.launcher import node_command
            from tuiapp.slurm.script import JobFiles, safe_name, sbatch_options

            spec = slurm_spec.for_trial(t.slurm)
            opts = [o for o in sbatch_options(spec, f"tuiapp-{safe_name(t.name)}", JobFiles(Path("JOB_DIR")))
                    if not o.startswith("--output=")]
            lines.append("  sbatch " + shlex.join(opts))
            lines.append("  each node: " + node_command(redact_argv(t.argv()), spec.nodes, spec.launcher))
    return "\n".join(lines) if lines else "nothing left to run"


def _check_text(plan, trials) -> str:
    from tuiapp.trials.diff import config_diff, confound_warning, knobs

    lines = [f"plan {plan.name}: {len(trials)} trials, baseline {plan.baseline.name}"]
    for t in trials:
        changes = config_diff(plan.reference(t), t) if not t.is_baseline else []
        diff = ", ".join(c.text() for c in changes) or "-"
        against = "" if t.is_baseline else f" vs {plan.reference(t).name}"
        lines.append(f"  {t.name}: {len(knobs(changes, plan.knob_groups))} knob(s){against}: {diff}")
        lines.append(f"    {' '.join(t.argv())}" + (f"  env {t.env}" if t.env else ""))
        if warning := confound_warning(t.name, changes, plan.knob_groups):
            lines.append(f"    warning: {warning}")
    return "\n".join(lines)
