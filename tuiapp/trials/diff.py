"""What a trial changes against the baseline, as knobs, on the effective configuration.

Keys are canonical flag names (``cuda-graph-max-bs``), ``env:NAME`` for environment
variables and ``command`` for the server command. A value of None means "absent / the
server's default". Operational flags (port, host, api key, log level...) are not knobs.
Several keys form one knob when they only make sense together: every ``speculative-*``
flag is the knob ``speculative``, and a plan's ``[knobs]`` table adds groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuiapp.trials.flags import NOT_KNOBS, effective_value
from tuiapp.trials.plan import TrialConfig


@dataclass(frozen=True)
class Change:
    key: str
    baseline: str | None
    trial: str | None

    def text(self) -> str:
        return f"{self.key} {_show(self.baseline)}->{_show(self.trial)}"


def _show(value: str | None) -> str:
    return "default" if value is None else value


def effective_settings(cfg: TrialConfig) -> dict[str, str | None]:
    out: dict[str, str | None] = {"command": " ".join(cfg.command)}
    for name, flag in cfg.flags.items():
        if name in NOT_KNOBS:
            continue
        out[name] = effective_value(name, flag)
    for name, value in cfg.env.items():
        out[f"env:{name}"] = value
    return out


def config_diff(baseline: TrialConfig, trial: TrialConfig) -> list[Change]:
    base, mine = effective_settings(baseline), effective_settings(trial)
    changes = []
    for key in [*base, *(k for k in mine if k not in base)]:
        if base.get(key) != mine.get(key):
            changes.append(Change(key, base.get(key), mine.get(key)))
    return changes


def knob_of(key: str, groups: dict[str, str] | None = None) -> str:
    if groups and key in groups:
        return groups[key]
    if key.startswith("speculative-"):
        return "speculative"
    return key


def knobs(changes: list[Change], groups: dict[str, str] | None = None) -> dict[str, list[Change]]:
    """Changes grouped by knob, in first-seen order."""
    out: dict[str, list[Change]] = {}
    for change in changes:
        out.setdefault(knob_of(change.key, groups), []).append(change)
    return out


def diff_dict(changes: list[Change]) -> dict[str, dict[str, str | None]]:
    """The ledger's ``diff`` field: key -> {"baseline": value, "trial": value}."""
    return {c.key: {"baseline": c.baseline, "trial": c.trial} for c in changes}


def confound_warning(name: str, changes: list[Change], groups: dict[str, str] | None = None) -> str | None:
    grouped = knobs(changes, groups)
    if len(grouped) <= 1:
        return None
    return (f"{name} changes {len(grouped)} knobs at once ({', '.join(grouped)}): its difference "
            f"cannot be attributed to any one of them; run --isolate {name}")
