"""An SGLang ``auto_benchmark`` YAML config as a plan (``python -m sglang.auto_benchmark run
--config X.yaml``, sglang#21736; the format as ``python/sglang/auto_benchmark_lib.py`` reads it):

    server:
      env: {CUDA_VISIBLE_DEVICES: "0,1"}
      command_prefix: python -m sglang.launch_server     # optional, as a string or a list
      base_flags: {model_path: M, tp: 2, mem_fraction_static: 0.85}
      search_space: {chunked_prefill_size: [4096, 8192], schedule_policy: [fcfs, lpm]}
      parallel: {tp: [1, 2], gpu_count: 2}      # more searched flags
      extra_args: [--trust-remote-code]
    benchmark:
      qps: {lower: 1, upper: 16, tolerance: 0.5}  # or a list of rates, or {values: [...]}
      max_concurrency: 64
      sla: {max_ttft_ms: 2000, max_tpot_ms: 80}
    dataset: {kind: random, random_input_len: 1024, random_output_len: 256, num_prompts: 200}
    search: {tier: 3, max_candidates: 8, max_duration_hours: 2}

The server part becomes the baseline and a ``[search]`` grid; flags are written as SGLang's
argparse reads them (``mem_fraction_static`` -> ``--mem-fraction-static``; ``tp``, ``dp``, ``ep``,
``pp`` -> ``--tp-size``...). tuiapp runs the full grid (auto_benchmark's tier 3), capped by
``max_candidates`` (the baseline counted, as there), with ``max_duration_hours`` as the budget.
The benchmark part becomes the plan's bench settings: a list of rates is a sweep, a
``{lower, upper}`` range with an SLA is ``find_max_load`` from ``lower``, the SLA is the SLO, a
random dataset the synthetic prompts. What tuiapp does not take over is said, one note a part;
what is malformed is a one-line error naming the file, the line and the field.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from tuiapp.server.command import DEFAULT_COMMAND
from tuiapp.trials.plan_error import PlanError

ALIASES = {"tp": "tp_size", "pp": "pp_size", "dp": "dp_size", "ep": "ep_size"}
MAX_HOURS = 12.0  # auto_benchmark's own cap on a search's budget
_SERVER_KEYS = {"env", "base_flags", "search_space", "parallel", "command_prefix", "extra_args", "host", "port",
                "launch"}
# benchmark keys that only drive SGLang's own bench_serving run, or its output files
_BENCH_NOT_READ = {"backend", "tokenizer", "output_dir", "base_url", "ready_check_timeout_sec", "disable_tqdm",
                   "output_details", "disable_stream", "disable_ignore_eos", "pd_separated", "tag",
                   "extra_request_body", "served_model_name"}


class _Yaml:
    """The parsed config with each key's line, for errors and notes that point at the text."""

    def __init__(self, text: str, path: Path) -> None:
        import yaml

        self.path = path
        self.notes: list[str] = []
        try:
            self.data = yaml.safe_load(text)
            self.root = yaml.compose(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 1
            raise PlanError(f"{path}:{line}: YAML syntax: {getattr(exc, 'problem', None) or exc}") from None

    def line(self, *keys: str) -> int:
        import yaml

        node, line = self.root, 1
        for key in keys:
            if not isinstance(node, yaml.MappingNode):
                break
            found = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        return line

    def error(self, keys: tuple[str, ...], message: str) -> Exception:
        return PlanError(f"{self.path}:{self.line(*keys)}: {'.'.join(keys)}: {message}")

    def note(self, keys: tuple[str, ...], message: str) -> None:
        self.notes.append(f"{self.path}:{self.line(*keys)}: {'.'.join(keys)}: {message}")


def _flag(name: str) -> str:
    return ALIASES.get(name, name).replace("_", "-")


def _mapping(cfg: _Yaml, value: Any, keys: tuple[str, ...], required: bool = False) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise cfg.error(keys, "required (a mapping)" if value is None else
                        f"expected a mapping (key: value lines), not {type(value).__name__}")
    return value


def _scalar(cfg: _Yaml, value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, (dict, list)):
        raise cfg.error(keys, f"expected a single value, not a {type(value).__name__}")
    return value


def _number(cfg: _Yaml, value: Any, keys: tuple[str, ...], *, whole: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or (whole and value != int(value)):
        raise cfg.error(keys, f"expected a {'whole ' if whole else ''}number > 0, not {value!r}")
    return float(value)


def _values(cfg: _Yaml, value: Any, keys: tuple[str, ...]) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise cfg.error(keys, "lists no value")
    for v in values:
        _scalar(cfg, v, keys)
    return values


def plan_data(text: str, path: Path) -> dict[str, Any]:
    """The plan's tables (as a TOML plan would give them); raises PlanError in one line. Notes on
    what is not taken over go to stderr, one line each."""
    cfg = _Yaml(text, path)
    if not isinstance(cfg.data, dict):
        raise cfg.error(("server",), "required (an SGLang auto_benchmark config is a mapping with a server section)")
    for key in cfg.data:
        if key not in ("server", "benchmark", "dataset", "search", "speculative"):
            cfg.note((str(key),), "not an auto_benchmark section; not read")
    baseline = _server(cfg, _mapping(cfg, cfg.data.get("server"), ("server",), required=True))
    bench = _benchmark(cfg, _mapping(cfg, cfg.data.get("benchmark"), ("benchmark",)))
    bench.update(_dataset(cfg, _mapping(cfg, cfg.data.get("dataset"), ("dataset",))))
    if bench:
        baseline["bench"] = bench
    speculative = _mapping(cfg, cfg.data.get("speculative"), ("speculative",))
    if speculative.get("enabled"):
        cfg.note(("speculative",), "its second stage is not run; write its candidates as trials")
    space = baseline.pop("_space")
    search = _search(cfg, _mapping(cfg, cfg.data.get("search"), ("search",)), space)
    for line in cfg.notes:
        print(f"note: {line}", file=sys.stderr)
    description = f"from SGLang auto_benchmark config {path.name}"
    return {"plan": {"name": path.stem, "description": description}, "baseline": baseline, "search": search}


def _server(cfg: _Yaml, server: dict[str, Any]) -> dict[str, Any]:
    for key in server:
        if key not in _SERVER_KEYS:
            cfg.note(("server", str(key)), "not an auto_benchmark server key; not read")
    if server.get("launch") is False:
        raise cfg.error(("server", "launch"), "false benchmarks a running server: that is `tuiapp attach URL`,"
                                              " not a plan")
    base: dict[str, Any] = {}
    for key, value in _mapping(cfg, server.get("base_flags"), ("server", "base_flags")).items():
        base[str(key)] = value if isinstance(value, list) and value else _scalar(
            cfg, value, ("server", "base_flags", str(key)))
    space: dict[str, list[Any]] = {}
    for key, value in _mapping(cfg, server.get("search_space"), ("server", "search_space")).items():
        space[str(key)] = _values(cfg, value, ("server", "search_space", str(key)))
    for key, value in _mapping(cfg, server.get("parallel"), ("server", "parallel")).items():
        if key == "gpu_count":
            continue
        values = _values(cfg, value, ("server", "parallel", str(key)))
        base.setdefault(str(key), values[0])
        space[str(key)] = values
    model = base.pop("model_path", None)
    baseline: dict[str, Any] = {"flags": {_flag(k): v for k, v in base.items() if v is not None}, "_space": space}
    if model is not None:
        baseline["model"] = str(model)
    env = _mapping(cfg, server.get("env"), ("server", "env"))
    if env:
        baseline["env"] = {str(k): _scalar(cfg, v, ("server", "env", str(k))) for k, v in env.items()}
    prefix, extra = server.get("command_prefix"), server.get("extra_args")
    if prefix is not None or extra is not None:
        if prefix is None:
            command = shlex.split(DEFAULT_COMMAND)
        elif isinstance(prefix, str):
            command = shlex.split(prefix)
        elif isinstance(prefix, list) and prefix:
            command = [str(_scalar(cfg, p, ("server", "command_prefix"))) for p in prefix]
        else:
            raise cfg.error(("server", "command_prefix"), f"expected a command (a string or a list), not {prefix!r}")
        if extra is not None and not isinstance(extra, list):
            raise cfg.error(("server", "extra_args"), f"expected a list of arguments, not {extra!r}")
        baseline["command"] = [*command, *(str(_scalar(cfg, a, ("server", "extra_args"))) for a in extra or [])]
    for key in ("host", "port"):
        if key in server:
            cfg.note(("server", key), "not read: tuiapp gives each launch its own port on this host")
    return baseline


def _benchmark(cfg: _Yaml, bench_cfg: dict[str, Any]) -> dict[str, Any]:
    """auto_benchmark's ``benchmark`` section as tuiapp bench settings."""
    out: dict[str, Any] = {}
    sla = _mapping(cfg, bench_cfg.get("sla"), ("benchmark", "sla"))
    for key, value in sla.items():
        goal = {"max_ttft_ms": "slo_ttft_ms", "max_tpot_ms": "slo_tpot_ms"}.get(str(key))
        if goal is None:
            raise cfg.error(("benchmark", "sla", str(key)), "unknown goal (max_ttft_ms, max_tpot_ms)")
        if value is not None:
            out[goal] = _number(cfg, value, ("benchmark", "sla", str(key)))
    if out:
        cfg.note(("benchmark", "sla"), "read as tuiapp's SLO: each request is judged, and a load passes when"
                                       " >= 99% meet it (auto_benchmark judges the mean TTFT and TPOT)")
    key = "qps" if "qps" in bench_cfg else "request_rate"
    qps = bench_cfg.get(key)
    where = ("benchmark", key)
    if isinstance(qps, dict) and "values" in qps:
        qps, where = qps["values"], ("benchmark", key, "values")
    if isinstance(qps, dict):
        missing = [k for k in ("lower", "upper") if k not in qps]
        if missing:
            raise cfg.error(where, f"a range needs lower and upper (missing {', '.join(missing)}); or list the rates")
        lower = _number(cfg, qps["lower"], (*where, "lower"))
        upper = _number(cfg, qps["upper"], (*where, "upper"))
        if upper <= lower:
            raise cfg.error(where, f"upper ({upper:g}) must be above lower ({lower:g})")
        for k in ("tolerance", "max_rounds"):
            if k in qps:
                _number(cfg, qps[k], (*where, k), whole=k == "max_rounds")
        if out:
            out.update(find_max_load=True, request_rate=lower)
            cfg.note(where, f"searched by tuiapp's --find-max-load from {lower:g} req/s (doubling, then bisecting"
                            " to 10%), not auto_benchmark's bisection of the range")
        else:
            out.update(sweep="request_rate", sweep_values=(lower, upper))
            cfg.note(where, f"without an sla every rate passes: run as a sweep of {lower:g} and {upper:g} req/s")
    elif qps is not None:
        rates = [_number(cfg, v, where) for v in _values(cfg, qps, where)]
        if len(rates) == 1:
            out["request_rate"] = rates[0]
        else:
            out.update(sweep="request_rate", sweep_values=tuple(rates))
    if "max_concurrency" in bench_cfg and bench_cfg["max_concurrency"] is not None:
        caps = [_number(cfg, v, ("benchmark", "max_concurrency"), whole=True)
                for v in _values(cfg, bench_cfg["max_concurrency"], ("benchmark", "max_concurrency")) if v is not None]
        if caps:
            out["max_concurrency"] = int(caps[0])
        if len(caps) > 1:
            cfg.note(("benchmark", "max_concurrency"), f"tuiapp runs one cap per plan: {int(caps[0])} (the first)")
    for key in ("seed", "warmup_requests"):
        if bench_cfg.get(key) is not None:
            value = bench_cfg[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise cfg.error(("benchmark", key), f"expected a whole number >= 0, not {value!r}")
            out[key] = value
    if bench_cfg.get("model") is not None:
        out["model"] = str(_scalar(cfg, bench_cfg["model"], ("benchmark", "model")))
    if "flush_cache" in bench_cfg:
        out["flush_cache"] = bool(bench_cfg["flush_cache"])
    for key in bench_cfg:
        if key in _BENCH_NOT_READ:
            cfg.note(("benchmark", str(key)), "drives SGLang's bench_serving; not read")
        elif key not in ("sla", "qps", "request_rate", "max_concurrency", "seed", "warmup_requests", "model",
                         "flush_cache"):
            cfg.note(("benchmark", str(key)), "not an auto_benchmark benchmark key; not read")
    return out


def _dataset(cfg: _Yaml, dataset: dict[str, Any]) -> dict[str, Any]:
    if not dataset:
        return {}
    kind = dataset.get("kind")
    if kind != "random":
        cfg.note(("dataset",), f"kind {kind!r} is not read: tuiapp's reference prompts are used (a random"
                               " dataset maps to its synthetic prompts)")
        return {}
    out: dict[str, Any] = {"workload": "synthetic"}
    for src, dest in (("random_input_len", "input_tokens"), ("random_output_len", "max_new_tokens"),
                      ("num_prompts", "requests_per_run")):
        if dataset.get(src) is None:
            continue
        values = [int(_number(cfg, v, ("dataset", src), whole=True)) for v in _values(cfg, dataset[src],
                                                                                       ("dataset", src))]
        out[dest] = values[0]
        if len(values) > 1:
            cfg.note(("dataset", src), f"auto_benchmark makes one scenario per value; tuiapp runs the first,"
                                       f" {values[0]}")
    return out


def _search(cfg: _Yaml, search_cfg: dict[str, Any], space: dict[str, list[Any]]) -> dict[str, Any]:
    search: dict[str, Any] = {"flags": {_flag(k): v for k, v in space.items()}}
    tier = search_cfg.get("tier")
    if tier is not None and tier not in (1, 2, 3):
        raise cfg.error(("search", "tier"), f"expected 1, 2 or 3, not {tier!r}")
    if tier in (1, 2):
        cfg.note(("search", "tier"), f"tier {tier} is auto_benchmark's own sampling; tuiapp runs the full grid"
                                     " (tier 3), capped by max_candidates")
    hours = search_cfg.get("max_duration_hours")
    if hours is not None:
        search["budget_s"] = min(_number(cfg, hours, ("search", "max_duration_hours")), MAX_HOURS) * 3600.0
    if "max_candidates" not in search_cfg:
        search["max_candidates"] = 8  # auto_benchmark's default
    elif search_cfg["max_candidates"] is not None:
        search["max_candidates"] = int(_number(cfg, search_cfg["max_candidates"], ("search", "max_candidates"),
                                               whole=True))
    for key in search_cfg:
        if key not in ("tier", "max_duration_hours", "max_candidates"):
            cfg.note(("search", str(key)), "not read" + (": tuiapp resumes with --resume --ledger FILE"
                                                         if key == "resume" else ""))
    return search
