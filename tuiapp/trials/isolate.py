"""One knob at a time: the trials that attribute a multi-knob trial's difference.

For trial T with knobs k1..kn against its reference R (its ``base``, default the baseline),
the generated plan is: R, then for each knob R with only that knob set as in T (named
``T/knob``), then T itself, so the ledger can set each knob's contribution beside the
combined one.
"""

from __future__ import annotations

from dataclasses import replace

from tuiapp.trials.diff import config_diff, knobs
from tuiapp.trials.flags import Flag
from tuiapp.trials.plan import Plan, TrialConfig


def isolate_trials(plan: Plan, name: str) -> list[TrialConfig]:
    """Raises KeyError when ``name`` is not a trial of the plan, ValueError when it has no knob."""
    target = plan.get(name)
    if target is None or target.is_baseline:
        raise KeyError(name)
    reference = plan.reference(target)
    grouped = knobs(config_diff(reference, target), plan.knob_groups)
    if not grouped:
        raise ValueError(f"{name} does not differ from {reference.name}")
    out = [reference]
    for knob, changes in grouped.items():
        cfg = reference
        for change in changes:
            cfg = _set(cfg, target, change.key)
        out.append(replace(cfg, name=f"{name}/{knob}", is_baseline=False, base=reference.name,
                           isolates=name, knob=knob, note=f"{reference.name} + {knob} of {name}"))
    out.append(replace(target, isolates=name, knob=None))
    return out


def _set(cfg: TrialConfig, target: TrialConfig, key: str) -> TrialConfig:
    """``cfg`` with one key (flag, env:NAME or command) taken from ``target``."""
    if key == "command":
        return replace(cfg, command=target.command)
    if key.startswith("env:"):
        env = dict(cfg.env)
        var = key[4:]
        if var in target.env:
            env[var] = target.env[var]
        else:
            env.pop(var, None)
        return replace(cfg, env=env)
    flags: dict[str, Flag] = dict(cfg.flags)
    if key in target.flags:
        flags[key] = target.flags[key]
    else:
        flags.pop(key, None)
    return replace(cfg, flags=flags)
