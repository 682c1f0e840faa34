"""``tuiapp compare BASE NEW``: is NEW faster or slower than BASE, beyond noise?

BASE and NEW are recordings (``--record``), ledgers (``trials --ledger``) or summaries
(``attach --summary``), in any mix. Each file becomes groups of per-run figures: one group per
trial (a recording or a ledger of several trials), or one group (a single session). Groups are
paired by name; two files of one group each are paired whatever their names. Per metric: the two
means, NEW/BASE, the 95% interval of that ratio (Welch-Satterthwaite on the difference of means,
divided by BASE's mean) and the verdict of Welch's t test (p < 0.05 and at least the minimum
effect, else "within noise"). Latencies are better when lower, so "faster" there means lower.
Where both files have load points (``points`` in a summary), each point shared by both is
compared by its figures (one value a side: a ratio, no verdict).
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.common import stats

# metric -> higher is better
METRICS: dict[str, bool] = {"decode_tok_s": True, "output_tok_s": True, "ttft_s": False, "tpot_s": False}
POINT_METRICS: dict[str, bool] = {"output_tok_s": True, "request_throughput_req_s": True, "goodput_req_s": True,
                                  "ttft_p50_ms": False, "ttft_p99_ms": False, "tpot_p50_ms": False,
                                  "e2e_p50_ms": False}
ALPHA = 0.05


class CompareError(ValueError):
    """One line for the user: a file that cannot be read or compared."""


@dataclass
class Group:
    runs: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})
    points: dict[tuple[str, float], dict[str, Any]] = field(default_factory=dict)


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


def _ledger(path: Path, text: str) -> dict[str, Group]:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompareError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    groups: dict[str, Group] = {}
    for row in rows:
        if not isinstance(row, dict) or "name" not in row or "status" not in row:
            raise CompareError(f"{path}: not a trials ledger (a row without name and status)")
        if row["status"] != "ok":
            continue
        g = groups.setdefault(row["name"], Group())
        g.runs["decode_tok_s"] = [float(x) for x in row.get("runs_decode_tok_s") or []]
        g.runs["output_tok_s"] = [float(x) for x in row.get("runs_output_tok_s") or []]
    return groups


def _recording(path: Path) -> dict[str, Group]:
    from tuiapp.record.reading import RecordingError, read_recording

    try:
        rec = read_recording(path)
    except RecordingError as exc:
        raise CompareError(str(exc)) from None
    groups: dict[str, Group] = {}
    for ev in rec.events:
        if ev.kind == "run" and ev.errors < ev.requests:
            g = groups.setdefault(ev.trial or "session", Group())
            for metric in METRICS:
                value = getattr(ev, metric)
                if value is not None:
                    g.runs[metric].append(value)
        elif ev.kind == "point":  # load points, where the recording has them
            g = groups.setdefault(getattr(ev, "trial", None) or "session", Group())
            key = _point_key(ev.model_dump())
            if key is not None:
                g.points[key] = ev.model_dump()
    return groups


def _summary(path: Path, data: Any) -> dict[str, Group]:
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise CompareError(f"{path}: not a recording, a ledger or a summary (no runs)")
    g = Group()
    for run in data["runs"]:
        if not isinstance(run, dict) or (run.get("errors") and run.get("decode_tok_s") is None):
            continue
        for metric in METRICS:
            if isinstance(run.get(metric), (int, float)):
                g.runs[metric].append(float(run[metric]))
    for point in data.get("points") or []:
        key = _point_key(point) if isinstance(point, dict) else None
        if key is not None:
            g.points[key] = point
    return {"session": g}


def _point_key(point: dict[str, Any]) -> tuple[str, float] | None:
    for name in ("concurrency", "request_rate"):
        if isinstance(point.get(name), (int, float)):
            return name, float(point[name])
    return None


@dataclass
class Row:
    group: str
    metric: str
    base_mean: float | None
    new_mean: float | None
    ratio: float | None
    ci95: tuple[float, float] | None  # of the ratio
    p_value: float | None
    verdict: str  # faster | slower | within noise | n/a (...)
    n_base: int = 0
    n_new: int = 0
    point: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def compare_runs(base: list[float], new: list[float], higher_better: bool, min_effect_pct: float) -> tuple:
    """(base mean, new mean, ratio, ratio's 95% interval, p, verdict)."""
    mb, mn = stats.mean(base), stats.mean(new)
    if mb is None or mn is None:
        return mb, mn, None, None, None, "n/a (no runs)"
    ratio = mn / mb if mb else None
    if len(base) < 2 or len(new) < 2:
        return mb, mn, ratio, None, None, "n/a (needs 2 runs a side)"
    t, dof, p = stats.welch(base, new)
    se = math.sqrt(stats.sd(base) ** 2 / len(base) + stats.sd(new) ** 2 / len(new))
    half = 0.0 if se == 0 else stats.t_quantile(0.975, dof) * se
    ci = ((mn - mb - half) / mb + 1, (mn - mb + half) / mb + 1) if mb else None
    effect_pct = abs(100.0 * (mn - mb) / mb) if mb else 0.0
    if p < ALPHA and effect_pct >= min_effect_pct:
        better = (t > 0) == higher_better
        return mb, mn, ratio, ci, p, "faster" if better else "slower"
    return mb, mn, ratio, ci, p, "within noise"


def pair(base: dict[str, Group], new: dict[str, Group]) -> list[tuple[str, Group, Group]]:
    common = [name for name in base if name in new]
    if common:
        return [(name, base[name], new[name]) for name in common]
    if len(base) == 1 and len(new) == 1:
        (bn, bg), (nn, ng) = next(iter(base.items())), next(iter(new.items()))
        return [(bn if bn == nn else f"{bn} -> {nn}", bg, ng)]
    raise CompareError(f"nothing to compare: BASE has {', '.join(base) or 'no runs'}; "
                       f"NEW has {', '.join(new) or 'no runs'}")


def compare(base: dict[str, Group], new: dict[str, Group], *, min_effect_pct: float = 0.5) -> list[Row]:
    rows: list[Row] = []
    for name, bg, ng in pair(base, new):
        for metric, higher in METRICS.items():
            b, n = bg.runs[metric], ng.runs[metric]
            if not b and not n:
                continue
            mb, mn, ratio, ci, p, verdict = compare_runs(b, n, higher, min_effect_pct)
            rows.append(Row(name, metric, mb, mn, ratio, ci, p, verdict, len(b), len(n)))
        for key in sorted(set(bg.points) & set(ng.points)):
            label = f"{key[0]}={key[1]:g}"
            for metric, higher in POINT_METRICS.items():
                bv, nv = bg.points[key].get(metric), ng.points[key].get(metric)
                b_runs, n_runs = bg.points[key].get(f"{metric}_runs") or [], ng.points[key].get(f"{metric}_runs") or []
                if len(b_runs) >= 2 and len(n_runs) >= 2:  # per-run figures (output tok/s): Welch
                    mb, mn, ratio, ci, p, verdict = compare_runs(b_runs, n_runs, higher, min_effect_pct)
                    rows.append(Row(name, metric, mb, mn, ratio, ci, p, verdict, len(b_runs), len(n_runs), label))
                elif isinstance(bv, (int, float)) and isinstance(nv, (int, float)):
                    rows.append(Row(name, metric, float(bv), float(nv), nv / bv if bv else None, None, None,
                                    "n/a (one value a side)", 1, 1, label))
    if not rows:
        raise CompareError("nothing to compare: neither file has a finished run")
    return rows


def primary_verdict(rows: list[Row], metric: str) -> str | None:
    """The verdict on the primary metric: slower if any paired group is slower."""
    verdicts = [r.verdict for r in rows if r.metric == metric and r.point is None]
    if "slower" in verdicts:
        return "slower"
    if "faster" in verdicts:
        return "faster"
    return verdicts[0] if verdicts else None


def table(rows: list[Row]) -> str:
    def f(v: float | None, spec: str = ".2f") -> str:
        return "n/a" if v is None else format(v, spec)

    w = min(60, max([len("group"), *(len(r.group) for r in rows)]))

    def label(r: Row) -> str:
        name = r.metric.replace("ttft_s", "ttft_ms").replace("tpot_s", "tpot_ms")
        return name if r.point is None else f"{name} @{r.point}"

    m = max([len("metric"), *(len(label(r)) for r in rows)])
    head = f"{'group':<{w}} {'metric':<{m}} {'base':>10} {'new':>10} {'new/base':>9} {'95% interval':>15}  verdict"
    lines = [head]
    for r in rows:
        scale = 1000.0 if r.metric in ("ttft_s", "tpot_s") else 1.0
        ci = "" if r.ci95 is None else f"{r.ci95[0]:.3f}-{r.ci95[1]:.3f}"
        base = None if r.base_mean is None else r.base_mean * scale
        new = None if r.new_mean is None else r.new_mean * scale
        lines.append(f"{r.group[:w]:<{w}} {label(r):<{m}} {f(base):>10} {f(new):>10} {f(r.ratio, '.3f'):>9} "
                     f"{ci:>15}  {r.verdict}" + (f" (n={r.n_base}/{r.n_new}, p={r.p_value:.2g})"
                                                  if r.p_value is not None else ""))
    return "\n".join(lines)
