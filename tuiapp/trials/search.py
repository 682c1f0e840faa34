"""``[search]`` in a plan: a space of flags expanded into trials, and how the results rank.

    [search]
    objective = "decode_tok_s"   # what ranks the combinations: decode_tok_s, output_tok_s,
                                 # output_tok_s@concurrency=64 (a sweep point), max_load (SLO)
    order = "grid"               # or "random" (with seed): the order the combinations run in
    seed = 0
    budget_s = 7200              # optional: no new combination starts after this long
    [search.flags]
    cuda-graph-max-bs = [128, 256, 512]
    mem-fraction-static = [0.85, 0.9]

Each combination is a trial built on the baseline (its flags set on top), named by its values
(``cuda-graph-max-bs=128,mem-fraction-static=0.85``), run after the plan's own trials. A
combination identical to the baseline's flags is the baseline, and is not run twice. What
happens to a trial that preflight refuses or that fails is what happens in any plan: it is
recorded with its reason and the search goes on; ``--resume`` runs only what is left.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tuiapp.trials.flags import canonical, to_value

Scalar = str | int | float | bool


class SearchSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flags: dict[str, list[Scalar]] = Field(default_factory=dict)
    objective: str = "decode_tok_s"
    order: Literal["grid", "random"] = "grid"
    seed: int = 0
    budget_s: float | None = Field(None, gt=0)
    max_candidates: int | None = Field(None, ge=1, description="at most this many trials, the baseline counted")

    @field_validator("objective")
    @classmethod
    def _objective(cls, value: str) -> str:
        import re

        if value in ("decode_tok_s", "output_tok_s", "max_load") or re.fullmatch(
                r"output_tok_s@(?:concurrency=\d+|request_rate=\d+(?:\.\d+)?)", value):
            return value
        raise ValueError("objective: decode_tok_s, output_tok_s, output_tok_s@concurrency=N, "
                         "output_tok_s@request_rate=R or max_load")

    @field_validator("flags")
    @classmethod
    def _values(cls, flags: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        for name, values in flags.items():
            if not values:
                raise ValueError(f"{name}: give at least one value")
            if len({str(v) for v in values}) != len(values):
                raise ValueError(f"{name}: a value is listed twice")
        return flags


@dataclass(frozen=True)
class SearchMeta:
    """What the runner and the ranking need of a plan's search."""

    objective: str
    budget_s: float | None
    names: tuple[str, ...]  # the combinations' trial names, in run order


def combination_name(values: dict[str, Scalar]) -> str:
    # a trial name may not hold "/" (reserved for --isolate's trials)
    return ",".join(f"{name.lstrip('-')}={_text(value)}" for name, value in values.items()).replace("/", "_")


def _text(value: Scalar) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def combinations(spec: SearchSpec) -> list[dict[str, Scalar]]:
    """Every combination of the flags' values, in the spec's order."""
    names = list(spec.flags)
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*spec.flags.values())]
    if spec.order == "random":
        random.Random(spec.seed).shuffle(combos)
    return combos


def same_as(values: dict[str, Scalar], flags: dict) -> bool:
    """True when setting ``values`` changes nothing in ``flags`` (canonical name -> Flag)."""
    for name, raw in values.items():
        value = to_value(raw)
        current = flags.get(canonical(name))
        if value is None or value is False:
            if current is not None and current.value not in (False,):
                return False
            continue
        if current is None or str(current.value) != str(value):
            return False
    return True
