"""An SGLang ``auto_benchmark`` YAML config as a plan: its server part becomes the baseline and
a ``[search]`` (``python -m sglang.auto_benchmark run --config X.yaml``, sglang#21736; the format
as ``python/sglang/auto_benchmark_lib.py`` reads it):

    server:
      env: {CUDA_VISIBLE_DEVICES: "0,1"}
      base_flags: {model_path: M, tp: 2, mem_fraction_static: 0.85}
      search_space: {chunked_prefill_size: [4096, 8192], schedule_policy: [fcfs, lpm]}
      parallel: {tp: [1, 2], gpu_count: 2}      # more searched flags
    search: {tier: 3, max_candidates: 8, max_duration_hours: 2}

Flags are written as SGLang's argparse reads them (``mem_fraction_static`` ->
``--mem-fraction-static``; ``tp``, ``dp``, ``ep``, ``pp`` -> ``--tp-size``...). tuiapp runs the
full grid of the search space (auto_benchmark's tier 3; tiers 1 and 2 are its own reduced
samplings, not taken over), capped by ``max_candidates`` (which counts the baseline, as there),
with ``max_duration_hours`` as the search's budget. The benchmark and dataset parts are
auto_benchmark's own and are not read: the plan's bench settings are tuiapp's defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ALIASES = {"tp": "tp_size", "pp": "pp_size", "dp": "dp_size", "ep": "ep_size"}


class _Error(ValueError):
    pass


def _flag(name: str) -> str:
    return ALIASES.get(name, name).replace("_", "-")


def plan_data(text: str, path: Path) -> dict[str, Any]:
    """The plan's tables (as a TOML plan would give them); raises PlanError in one line."""
    import yaml

    from tuiapp.trials.plan import PlanError

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise PlanError(f"{path}:{line}: YAML syntax: {getattr(exc, 'problem', None) or exc}") from None
    server = config.get("server") if isinstance(config, dict) else None
    if not isinstance(server, dict):
        raise PlanError(f"{path}:1: server: required (an SGLang auto_benchmark config has a server section)")
    base = dict(server.get("base_flags") or {})
    space = dict(server.get("search_space") or {})
    for key, value in (server.get("parallel") or {}).items():
        if key == "gpu_count":
            continue
        values = value if isinstance(value, list) else [value]
        base.setdefault(key, values[0])
        space[key] = values
    model = base.pop("model_path", None)
    baseline: dict[str, Any] = {"flags": {_flag(k): v for k, v in base.items() if v is not None}}
    if model is not None:
        baseline["model"] = str(model)
    if server.get("env"):
        baseline["env"] = {str(k): v for k, v in server["env"].items()}
    search_cfg = config.get("search") or {}
    search: dict[str, Any] = {"flags": {_flag(k): (v if isinstance(v, list) else [v]) for k, v in space.items()}}
    if search_cfg.get("max_duration_hours") is not None:
        search["budget_s"] = min(float(search_cfg["max_duration_hours"]), 12.0) * 3600.0
    data: dict[str, Any] = {"plan": {"name": path.stem, "description": f"from SGLang auto_benchmark config {path.name}"},
                            "baseline": baseline, "search": search}
    max_candidates = search_cfg.get("max_candidates", 8)
    if max_candidates is not None:
        data["search"]["max_candidates"] = int(max_candidates)
    return data
