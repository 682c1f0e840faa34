"""``tuiapp compare BASE NEW``: is NEW faster or slower than BASE, beyond noise, and can it be judged?

BASE and NEW are recordings (``--record``), ledgers (``trials --ledger``) or summaries
(``attach --summary``), in any mix. Each file becomes groups (one per trial; a single session
is one group), and each group holds per-run figures *per load* (a sweep's concurrency or
rate): runs of different loads are never pooled. Groups are paired by name (two files of one
group each are paired whatever their names), loads by value.

Per group, load and metric: the two means, NEW/BASE, its 95% interval and the verdict of
tuiapp.common.verdict.welch_compare, with Holm's correction over the loads of a sweep; per
group, the failed-request share (tuiapp.common.verdict.error_rate_verdict), and with speculative
decoding, acceptance per draft position over all the group's runs (a draft model's acceptance
is not a property of the load; tuiapp.common.acceptance_compare, as the ledger judges it:
higher/lower, never part of the gate). :func:`gate` turns
it into what a CI job needs: 0 pass, 1 slower or worse on errors, 3 NEW cannot be judged
(a trial failed or missing, a load missing, fewer than two runs, every request failed, no
output), each reason listed.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.common import verdict as judge
from tuiapp.common.acceptance import counts
from tuiapp.common.acceptance_compare import compare_positions, runs_by_position

# metric -> higher is better
METRICS: dict[str, bool] = {"decode_tok_s": True, "output_tok_s": True, "ttft_s": False, "tpot_s": False}
POINT_METRICS: dict[str, bool] = {"served_request_rate": True,
                                  "goodput_req_s": True, "ttft_p50_ms": False, "ttft_p99_ms": False,
                                  "tpot_p50_ms": False, "e2e_p50_ms": False}
ERRORS = "failed_share"
EXIT_PASS, EXIT_SLOWER, EXIT_USAGE, EXIT_INVALID = 0, 1, 2, 3

Load = tuple[str, float] | None


class CompareError(ValueError):
    """One line for the user: a file that cannot be read or compared."""


@dataclass
class Group:
    loads: dict[Load, dict[str, list[float]]] = field(default_factory=dict)  # per load: metric -> runs
    points: dict[tuple[str, float], dict[str, Any]] = field(default_factory=dict)  # a point's single figures
    requests: int = 0
    failed: int = 0
    output_tokens: int | None = None
    accept_runs: list[list[float]] = field(default_factory=list)  # per draft position, each run's acceptance
    status: str = "ok"  # a ledger row's status
    problems: list[str] = field(default_factory=list)  # why its measurement cannot be judged

    def runs(self, load: Load) -> dict[str, list[float]]:
        return self.loads.setdefault(load, {m: [] for m in METRICS})


def load(path: Path) -> dict[str, Group]:
    """The file's groups by name; raises CompareError."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    except OSError as exc:
        raise CompareError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (EOFError, gzip.BadGzipFile) as exc:
        raise CompareError(f"{path}: not a gzip file ({exc})") from None
    text = raw.decode("utf-8", "replace")
    first = text.lstrip()[:1]
    if first == "[":
        return _ledger(path, text)
    if first == "{":
        head = text.split("\n", 1)[0]
        try:
            obj = json.loads(head)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and obj.get("format") == "tuiapp-recording":
            return _recording(path)
        try:
            return _summary(path, json.loads(text))
        except json.JSONDecodeError as exc:
            raise CompareError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    raise CompareError(f"{path}: not a recording, a ledger or a summary")


def _floats(values: Any, where: str) -> list[float]:
    if not isinstance(values, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                for x in values):
        raise CompareError(f"{where}: expected a list of numbers")
    return [float(x) for x in values]


def _points_into(g: Group, points: list[Any], where: str) -> None:
    """A sweep's points: per-run figures per load, and each point's single figures."""
    for point in points:
        if not isinstance(point, dict) or point.get("search_probe"):
            continue
        key = judge.load_of(point)
        if key is None:
            continue
        g.points[key] = point
        runs = g.runs(key)
        for metric in ("decode_tok_s", "output_tok_s"):
            runs[metric] = _floats(point.get(f"{metric}_runs") or [], f"{where}: {metric}_runs")


def _ledger(path: Path, text: str) -> dict[str, Group]:
    from pydantic import ValidationError

    from tuiapp.trials.ledger import OK, LedgerRow

    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompareError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    groups: dict[str, Group] = {}
    for i, raw in enumerate(rows):
        if not isinstance(raw, dict) or "name" not in raw or "status" not in raw:
            raise CompareError(f"{path}: not a trials ledger (row {i + 1} has no name and status)")
        try:
            row = LedgerRow.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CompareError(f"{path}: row {i + 1} ({raw.get('name')!r}): {where}: {first['msg']}") from None
        g = groups.setdefault(row.name, Group())
        g.status = row.status
        if row.status != OK:
            g.problems.append(f"{row.status}: {row.first_error}" if row.first_error else row.status)
            continue
        g.requests, g.failed, g.output_tokens = row.requests, row.failed_requests, row.output_tokens
        g.problems += row.invalid
        g.accept_runs = [list(runs) for runs in row.runs_accept_by_position]
        if row.points:
            _points_into(g, row.points, f"{path}: {row.name}")
        else:
            runs = g.runs(None)
            runs["decode_tok_s"] = list(row.runs_decode_tok_s)
            runs["output_tok_s"] = list(row.runs_output_tok_s)
    return groups


def _recording(path: Path) -> dict[str, Group]:
    from tuiapp.record.reading import RecordingError, read_recording

    try:
        rec = read_recording(path)
    except RecordingError as exc:
        raise CompareError(str(exc)) from None
    groups: dict[str, Group] = {}
    spec: dict[str, list[tuple[list[int] | None, list[int] | None]]] = {}
    for ev in rec.events:
        if ev.kind == "run":
            g = groups.setdefault(ev.trial or "session", Group())
            spec.setdefault(ev.trial or "session", []).append((ev.spec_accept_histogram, ev.spec_cap_histogram))
            g.requests += ev.requests
            g.failed += ev.errors
            if ev.errors >= ev.requests:
                continue
            key: Load = ("request_rate", float(ev.request_rate)) if ev.request_rate is not None \
                else ("concurrency", float(ev.concurrency))
            runs = g.runs(key)
            for metric in METRICS:
                value = getattr(ev, metric)
                if value is not None:
                    runs[metric].append(value)
        elif ev.kind == "point" and not ev.search:
            g = groups.setdefault(ev.trial or "session", Group())
            key = judge.load_of(ev.model_dump())
            if key is not None:
                g.points[key] = ev.model_dump()
    for name, g in groups.items():
        g.accept_runs = runs_by_position(spec.get(name, []))
        g.problems += _measured_problems(g)
    return groups


def _summary(path: Path, data: Any) -> dict[str, Group]:
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise CompareError(f"{path}: not a recording, a ledger or a summary (no runs)")
    g = Group()
    points = [p for p in data.get("points") or [] if isinstance(p, dict) and not p.get("search_probe")]
    if len(points) > 1:  # a sweep: its top-level runs mix loads; the points hold them apart
        _points_into(g, points, str(path))
    else:
        key = judge.load_of(points[0]) if points else None
        runs = g.runs(key)
        for i, run in enumerate(data["runs"]):
            if not isinstance(run, dict) or (run.get("errors") and run.get("decode_tok_s") is None):
                continue
            for metric in METRICS:
                value = run.get(metric, run.get("itl_s") if metric == "tpot_s" else None)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    runs[metric].append(float(value))
                elif value is not None:
                    raise CompareError(f"{path}: runs[{i}].{metric}: expected a number")
        if key is not None:
            g.points[key] = points[0]
    g.accept_runs = runs_by_position((counts(run.get("spec_accept_histogram")), counts(run.get("spec_cap_histogram")))
                                     for run in data["runs"] if isinstance(run, dict))
    for p in points:
        g.requests += int(p.get("requests") or 0)
        g.failed += int(p.get("errors") or 0)
    g.problems += _measured_problems(g)
    return {"session": g}


def _measured_problems(g: Group) -> list[str]:
    return judge.invalid_reasons(requests=g.requests, failed=g.failed, output_tokens=g.output_tokens, runs=0)


@dataclass
class Row:
    group: str
    metric: str
    base_mean: float | None
    new_mean: float | None
    ratio: float | None
    ci95: tuple[float, float] | None  # of the ratio
    p_value: float | None
    verdict: str  # faster | slower | within noise | worse | n/a (...)
    n_base: int = 0
    n_new: int = 0
    point: str | None = None
    p_adjusted: float | None = None  # Holm over the group's loads

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _label(load: Load) -> str | None:
    return None if load is None else f"{load[0]}={load[1]:g}"


def pair(base: dict[str, Group], new: dict[str, Group]) -> list[tuple[str, Group | None, Group | None]]:
    """(name, BASE's group, NEW's group); a group only one side has comes with None opposite."""
    common = [name for name in base if name in new]
    if common:
        return [(name, base[name], new.get(name)) for name in base]
    if len(base) == 1 and len(new) == 1:
        (bn, bg), (nn, ng) = next(iter(base.items())), next(iter(new.items()))
        return [(bn if bn == nn else f"{bn} -> {nn}", bg, ng)]
    raise CompareError(f"nothing to compare: BASE has {', '.join(base) or 'no runs'}; "
                       f"NEW has {', '.join(new) or 'no runs'}")


_MISSING = ("missing", -1.0)


def _paired_loads(bg: Group, ng: Group) -> list[tuple[Load, Load]]:
    """Loads of BASE with NEW's counterpart (_MISSING where NEW lacks it). Two single-load
    sessions pair whatever their loads are called (a summary may not name its load)."""
    b_loads, n_loads = list(bg.loads), list(ng.loads)
    if len(b_loads) == 1 and len(n_loads) == 1 and (None in (b_loads[0], n_loads[0]) or b_loads == n_loads):
        return [(b_loads[0], n_loads[0])]
    return [(k, k if k in ng.loads else _MISSING) for k in b_loads]


def compare(base: dict[str, Group], new: dict[str, Group], *, min_effect_pct: float = judge.MIN_EFFECT_PCT) -> list[Row]:
    rows: list[Row] = []
    for name, bg, ng in pair(base, new):
        if bg is None or ng is None or bg.status != "ok" or ng.status != "ok":
            continue
        loads = [(b, n) for b, n in _paired_loads(bg, ng) if n != _MISSING]
        single = len(loads) == 1
        for metric, higher in METRICS.items():
            pairs = [(bg.loads[b][metric], ng.loads[n][metric], b) for b, n in loads
                     if bg.loads[b][metric] or ng.loads[n][metric]]
            raw = [judge.welch_compare(b, n, higher_better=higher).p_value for b, n, _ in pairs]
            adjusted = judge.holm(raw) if len(pairs) > 1 else [None] * len(pairs)
            for (b, n, key), p_adj in zip(pairs, adjusted, strict=True):
                c = judge.welch_compare(b, n, higher_better=higher, min_effect_pct=min_effect_pct, p_adjusted=p_adj)
                rows.append(Row(name, metric, c.base_mean, c.new_mean, c.ratio, c.ci95, c.p_value, c.verdict,
                                c.n_base, c.n_new, None if single else _label(key), c.p_adjusted))
        for key in sorted(set(bg.points) & set(ng.points)):
            measured = (bg.loads.get(key) or {}).get("output_tok_s") and (ng.loads.get(key) or {}).get("output_tok_s")
            for metric in ([] if measured else ["output_tok_s"]) + list(POINT_METRICS):
                bv, nv = bg.points[key].get(metric), ng.points[key].get(metric)
                if isinstance(bv, (int, float)) and isinstance(nv, (int, float)):
                    rows.append(Row(name, metric, float(bv), float(nv), nv / bv if bv else None, None, None,
                                    "n/a (one value a side)", 1, 1, _label(key)))
        for v in compare_positions(bg.accept_runs, ng.accept_runs, min_effect_pct=min_effect_pct):
            k = v["position"] - 1
            ratio = v["new"] / v["base"] if v["base"] and v["new"] is not None else None
            rows.append(Row(name, f"accept_p{v['position']}", v["base"], v["new"], ratio, None, v["p_value"],
                            v["verdict"], len(bg.accept_runs[k]), len(ng.accept_runs[k]), None, v["p_adjusted"]))
        if bg.requests and ng.requests:
            worse, p = judge.error_rate_verdict(bg.failed, bg.requests, ng.failed, ng.requests)
            rows.append(Row(name, ERRORS, bg.failed / bg.requests, ng.failed / ng.requests, None, None, p, worse,
                            bg.requests, ng.requests))
    return rows


def primary_verdict(rows: list[Row], metric: str) -> str | None:
    """The verdict on the primary metric: slower if any paired group is slower at any load
    (Holm-corrected), else faster if any is faster."""
    verdicts = [r.verdict for r in rows if r.metric == metric]
    if "slower" in verdicts:
        return "slower"
    if "faster" in verdicts:
        return "faster"
    return verdicts[0] if verdicts else None


@dataclass
class Gate:
    code: int
    verdict: str | None  # the primary metric's
    reasons: list[str]  # each reason the gate did not pass (empty: pass)


def gate(base: dict[str, Group], new: dict[str, Group], rows: list[Row], metric: str) -> Gate:
    """The CI answer: 3 when NEW (or BASE) cannot be judged, else 1 when NEW is slower on
    ``metric`` at any load or fails more requests beyond chance, else 0."""
    invalid: list[str] = []
    for name, bg, ng in pair(base, new):
        if ng is None:
            invalid.append(f"NEW has no trial {name!r}")
            continue
        if bg is None:
            continue
        for side, g in (("BASE", bg), ("NEW", ng)):
            invalid += [f"{side}'s {name}: {p}" for p in g.problems]
        if bg.status != "ok" or ng.status != "ok":
            continue
        for b_load, n_load in _paired_loads(bg, ng):
            where = f" at {judge.load_label(b_load)}" if b_load is not None else ""
            if n_load == _MISSING:
                invalid.append(f"NEW's {name} has no point{where}")
                continue
            for side, runs in (("BASE", bg.loads[b_load][metric]), ("NEW", ng.loads[n_load][metric])):
                if len(runs) < judge.MIN_RUNS:
                    invalid.append(f"{side}'s {name} has {len(runs)} run(s) of {metric}{where};"
                                   f" a verdict needs {judge.MIN_RUNS}")
    primary = primary_verdict(rows, metric)
    if invalid:
        return Gate(EXIT_INVALID, primary, invalid)
    reasons = [f"{r.group}: {metric} slower{' at ' + r.point if r.point else ''} ({_pct(r)}, p={_p(r)})"
               for r in rows if r.metric == metric and r.verdict == "slower"]
    reasons += [f"{r.group}: failed requests {100 * (r.new_mean or 0):.1f}% vs {100 * (r.base_mean or 0):.1f}%"
                f" (worse, p={r.p_value:.2g})" for r in rows if r.metric == ERRORS and r.verdict == "worse"]
    return Gate(EXIT_SLOWER if reasons else EXIT_PASS, primary, reasons)


def _pct(r: Row) -> str:
    return "n/a" if r.ratio is None else f"{100 * (r.ratio - 1):+.1f}%"


def _p(r: Row) -> str:
    p = r.p_adjusted if r.p_adjusted is not None else r.p_value
    return "n/a" if p is None else f"{p:.2g}"


def table(rows: list[Row]) -> str:
    def f(v: float | None, spec: str = ".2f") -> str:
        return "n/a" if v is None else format(v, spec)

    w = min(60, max([len("group"), *(len(r.group) for r in rows)]))

    def label(r: Row) -> str:
        name = r.metric.replace("ttft_s", "ttft_ms").replace("tpot_s", "tpot_ms")
        if r.metric.startswith("accept_p"):
            name += " %"  # accepted / steps that reached the position
        return name if r.point is None else f"{name} @{r.point}"

    m = max([len("metric"), *(len(label(r)) for r in rows)])
    head = f"{'group':<{w}} {'metric':<{m}} {'base':>10} {'new':>10} {'new/base':>9} {'95% interval':>15}  verdict"
    lines = [head]
    for r in rows:
        scale = 1000.0 if r.metric in ("ttft_s", "tpot_s") else 100.0 if (
            r.metric == ERRORS or r.metric.startswith("accept_p")) else 1.0
        ci = "" if r.ci95 is None else f"{r.ci95[0]:.3f}-{r.ci95[1]:.3f}"
        base = None if r.base_mean is None else r.base_mean * scale
        new = None if r.new_mean is None else r.new_mean * scale
        detail = ""
        if r.p_value is not None:
            holm = f", Holm p={r.p_adjusted:.2g}" if r.p_adjusted is not None else ""
            detail = f" (n={r.n_base}/{r.n_new}, p={r.p_value:.2g}{holm})"
        lines.append(f"{r.group[:w]:<{w}} {label(r):<{m}} {f(base):>10} {f(new):>10} {f(r.ratio, '.3f'):>9} "
                     f"{ci:>15}  {r.verdict}{detail}")
    return "\n".join(lines)
