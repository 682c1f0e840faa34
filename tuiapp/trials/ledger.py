"""The ledger: one row per trial, what it proved, saved after every trial.

Each trial is compared with its reference (``baseline`` field: the trial it builds on,
default the plan's baseline). The verdict is Welch's t test on the per-run decode tok/s
(tuiapp.common.stats): p < 0.05 says faster or slower, otherwise "within noise"; and a
difference under ``min_effect_pct`` (default 0.5%) is "within noise" whatever p says,
because a handful of very steady runs makes even a 0.1% shift "significant". A trial
that failed, or is slower than its reference beyond noise, is a dead end; one refused by
preflight was never tried, so it is not (and ``--resume`` tries it again). Rows keep their
run figures, so a ``--resume``d plan compares new trials with the baseline measured before.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tuiapp.common import stats
from tuiapp.common.atomic_write import write_atomic
from tuiapp.common.difftext import diff_text
from tuiapp.common.numfmt import NA, gib, num
from tuiapp.common.redact import mask
from tuiapp.trials.curves import compare_points, curve_lines

OK = "ok"
NOT_RUN = "preflight"  # refused before launch: a plan or install problem, not an experiment
ALPHA = 0.05
MIN_EFFECT_PCT = 0.5


class LedgerRow(BaseModel):
    name: str
    status: str  # ok | oom | assertion | keyerror | jit_arch | nccl | crash | hang | timeout | preflight | error
    dead_end: bool = False
    note: str = ""
    is_baseline: bool = False
    baseline: str | None = None  # the row this one is compared with
    first_error: str | None = None
    error_ranks: list[int] = Field(default_factory=list)
    first_error_log_line: int | None = None
    alerts: list[dict[str, Any]] = Field(default_factory=list)  # every error alert: kind, message, ranks
    runs_decode_tok_s: list[float] = Field(default_factory=list)
    mean_decode_tok_s: float | None = None
    sd_decode_tok_s: float | None = None
    ci95_decode_tok_s: tuple[float, float] | None = None
    mean_output_tok_s: float | None = None
    runs_output_tok_s: list[float] = Field(default_factory=list)
    mean_ttft_s: float | None = None
    accept_length: float | None = None
    startup_s: float | None = None
    peak_mem_bytes: dict[str, int] = Field(default_factory=dict)  # GPU index -> bytes
    pcie_avg_bytes_s: float | None = None  # per GPU, tx + rx, mean over the benchmark
    pcie_peak_bytes_s: float | None = None  # busiest GPU's busiest sample, tx + rx
    diff: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    knobs: list[str] = Field(default_factory=list)
    confound: str | None = None
    verdict: str | None = None  # baseline | faster | slower | within noise | None (no runs)
    p_value: float | None = None
    delta_tok_s: float | None = None
    delta_pct: float | None = None
    isolates: str | None = None  # the multi-knob trial this row helps attribute
    knob: str | None = None  # the one knob this row sets (isolate rows)
    share_pct: float | None = None  # this knob's delta as a share of the combined trial's
    fingerprint: str | None = None  # TrialConfig.fingerprint() of what was measured
    argv: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    duration_s: float | None = None
    rank: int | None = None  # a [search]'s place by its objective, 1 = best (ok rows only)
    vs_best: str | None = None  # best | within noise | slower (Welch against the best row's runs)
    # Load curves (a sweep or open loop): one summary dict per point, the per-point Welch
    # verdicts against the reference and where the two curves cross (tuiapp.trials.curves)
    points: list[dict[str, Any]] = Field(default_factory=list)
    point_verdicts: list[dict[str, Any]] = Field(default_factory=list)
    crossings: list[str] = Field(default_factory=list)
    # The Slurm job behind the row (trials --slurm; tuiapp.slurm.runner.fill_slurm_fields)
    slurm_job_id: str | None = None
    slurm_state: str | None = None  # COMPLETED | FAILED | TIMEOUT | CANCELLED | OUT_OF_MEMORY | NODE_FAIL ...
    slurm_nodes: list[str] = Field(default_factory=list)
    slurm_queue_wait_s: float | None = None  # submit to start, as Slurm stamps them
    slurm_reason: str | None = None  # why tuiapp cancelled it (the first fatal incident)
    slurm_cancel_after_alert_s: float | None = None  # that incident's alert to scancel's return
    slurm_submit_to_first_token_s: float | None = None


GOOD_SHARE = 0.99  # a load "meets the SLO" when this share of its requests met every goal


def objective_values(row: LedgerRow, objective: str) -> list[float]:
    """A row's figures for a search objective: per-run values (Welch compares them), or the one
    value of ``max_load``. Objectives: ``decode_tok_s``, ``output_tok_s``,
    ``output_tok_s@concurrency=N`` / ``output_tok_s@request_rate=R`` (that sweep point's runs),
    ``max_load`` (the largest load whose goodput share met the SLO, from --find-max-load or a sweep)."""
    if objective == "decode_tok_s":
        return row.runs_decode_tok_s
    if objective == "output_tok_s":
        return row.runs_output_tok_s
    if objective.startswith("output_tok_s@"):
        key, _, value = objective.split("@", 1)[1].partition("=")
        for point in row.points:
            if point.get(key) is not None and float(point[key]) == float(value) and not point.get("search_probe"):
                return [float(x) for x in point.get("output_tok_s_runs") or []]
        return []
    if objective == "max_load":
        loads = [float(p.get("concurrency") or p.get("request_rate") or 0) for p in row.points
                 if (p.get("goodput_share") or 0.0) >= GOOD_SHARE]
        return [max(loads)] if loads else []
    raise ValueError(f"unknown objective {objective!r}")


def fill_run_stats(row: LedgerRow) -> None:
    runs = row.runs_decode_tok_s
    row.mean_decode_tok_s = stats.mean(runs)
    row.sd_decode_tok_s = stats.sd(runs)
    row.ci95_decode_tok_s = stats.ci95(runs)


class Ledger:
    """Ordered rows by name; ``compare()`` fills verdicts, dead ends and attribution."""

    def __init__(self, rows: list[LedgerRow] | None = None, *, min_effect_pct: float = MIN_EFFECT_PCT) -> None:
        self.rows: dict[str, LedgerRow] = {r.name: r for r in rows or []}
        self.min_effect_pct = min_effect_pct

    @classmethod
    def load(cls, path: Path, *, min_effect_pct: float = MIN_EFFECT_PCT) -> Ledger:
        """Raises ValueError on a file that is not a ledger, or cannot be read."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
            return cls([LedgerRow.model_validate(r) for r in data], min_effect_pct=min_effect_pct)
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: not a trials ledger ({str(exc).splitlines()[0]})") from None

    def add(self, row: LedgerRow) -> None:
        self.rows[row.name] = row
        self.compare()

    def done(self, name: str, fingerprint: str | None = None) -> bool:
        """A row for ``name`` exists (and, given a fingerprint, measured that configuration)."""
        row = self.rows.get(name)
        if row is None or row.status == NOT_RUN:
            return False
        return fingerprint is None or row.fingerprint in (None, fingerprint)

    @property
    def baseline(self) -> LedgerRow | None:
        return next((r for r in self.rows.values() if r.is_baseline), None)

    def compare(self) -> None:
        for row in self.rows.values():
            if row.is_baseline:
                row.verdict = "baseline" if row.status == OK else None
                row.dead_end = row.status not in (OK, NOT_RUN)
                continue
            row.verdict = row.p_value = row.delta_tok_s = row.delta_pct = None
            ref = self.rows.get(row.baseline) if row.baseline else self.baseline
            base_runs = ref.runs_decode_tok_s if ref is not None and ref.status == OK else []
            if row.status == OK and base_runs and row.runs_decode_tok_s:
                row.verdict = stats.verdict(base_runs, row.runs_decode_tok_s, alpha=ALPHA)
                if len(base_runs) >= 2 and len(row.runs_decode_tok_s) >= 2:
                    row.p_value = stats.welch(base_runs, row.runs_decode_tok_s)[2]
                base_mean = stats.mean(base_runs)
                row.delta_tok_s = row.mean_decode_tok_s - base_mean
                row.delta_pct = 100.0 * row.delta_tok_s / base_mean if base_mean else None
                if row.delta_pct is not None and abs(row.delta_pct) < self.min_effect_pct:
                    row.verdict = "within noise"
            row.dead_end = row.status not in (OK, NOT_RUN) or row.verdict == "slower"
            row.point_verdicts, row.crossings = [], []
            if row.status == OK and row.points and ref is not None and ref.status == OK and ref.points:
                row.point_verdicts, row.crossings = compare_points(ref.points, row.points)
        for row in self.rows.values():
            row.share_pct = None
            combined = self.rows.get(row.isolates or "")
            if row.knob and combined and combined.delta_tok_s and row.delta_tok_s is not None:
                row.share_pct = 100.0 * row.delta_tok_s / combined.delta_tok_s

    def rank(self, objective: str = "decode_tok_s") -> list[LedgerRow]:
        """Rank the rows that ran by their mean ``objective`` (per-run figures), best first; each
        is compared with the best by Welch's test, so a difference within noise says so."""
        def runs_of(r: LedgerRow) -> list[float]:
            return objective_values(r, objective)

        ranked = sorted((r for r in self.rows.values() if r.status == OK and runs_of(r)),
                        key=lambda r: stats.mean(runs_of(r)), reverse=True)
        for row in self.rows.values():
            row.rank = row.vs_best = None
        if not ranked:
            return []
        best = ranked[0]
        best_mean = stats.mean(runs_of(best))
        for place, row in enumerate(ranked, 1):
            row.rank = place
            if row is best:
                row.vs_best = "best"
                continue
            if objective == "max_load":  # one value a trial: no test, only the order
                row.vs_best = "lower" if stats.mean(runs_of(row)) < best_mean else "best"
                continue
            gap_pct = 100.0 * (best_mean - stats.mean(runs_of(row))) / best_mean if best_mean else 0.0
            slower = stats.verdict(runs_of(best), runs_of(row), alpha=ALPHA) == "slower"
            row.vs_best = "slower" if slower and gap_pct >= self.min_effect_pct else "within noise"
        return ranked

    def attribution(self) -> list[str]:
        """One line per isolated trial: each knob's contribution and what is left over."""
        lines = []
        for combined in self.rows.values():
            parts = [r for r in self.rows.values() if r.isolates == combined.name and r.knob]
            if not parts or combined.delta_tok_s is None:
                continue
            bits = []
            total = 0.0
            for r in parts:
                if r.delta_tok_s is None:
                    bits.append(f"{r.knob}: {r.status}")
                    continue
                total += r.delta_tok_s
                share = f", {r.share_pct:.0f}% of the gain" if r.share_pct is not None else ""
                bits.append(f"{r.knob} {r.delta_tok_s:+.2f} tok/s ({r.verdict}{share})")
            rest = combined.delta_tok_s - total
            lines.append(f"{combined.name} {combined.delta_tok_s:+.2f} tok/s vs {combined.baseline or 'the baseline'} = "
                         + "; ".join(bits) + f"; interaction {rest:+.2f} tok/s")
        return lines

    # ------------------------------------------------------------ export

    def to_json(self) -> str:
        return json.dumps([r.model_dump(mode="json") for r in self.rows.values()], indent=1)

    def to_markdown(self) -> str:
        head = ["trial", "status", "decode tok/s", "95% CI", "vs base", "verdict", "accept len",
                "startup s", "peak mem GiB", "PCIe avg/peak GB/s", "diff", "notes"]
        ranked = any(r.rank is not None for r in self.rows.values())
        if ranked:
            head = ["rank", "vs best", *head]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        rows = sorted(self.rows.values(), key=lambda r: (r.rank is None, r.rank or 0)) if ranked else self.rows.values()
        for r in rows:
            cells = _md_cells(r)
            if ranked:
                cells = [str(r.rank) if r.rank is not None else "-", r.vs_best or "-", *cells]
            out.append("| " + " | ".join(cells) + " |")
        attribution = self.attribution()
        if attribution:
            out += ["", *[f"- {line}" for line in attribution]]
        out += curve_lines(self.rows.values())
        return "\n".join(out) + "\n"

    def to_csv(self) -> str:
        cols = ["name", "status", "dead_end", "mean_decode_tok_s", "sd_decode_tok_s", "ci95_low",
                "ci95_high", "runs_decode_tok_s", "delta_tok_s", "delta_pct", "p_value", "verdict",
                "accept_length", "startup_s", "peak_mem_max_bytes", "pcie_avg_bytes_s",
                "pcie_peak_bytes_s", "first_error", "error_ranks", "diff", "confound", "isolates",
                "knob", "share_pct", "rank", "vs_best", "note"]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in self.rows.values():
            d = r.model_dump(mode="json")
            ci = r.ci95_decode_tok_s or (None, None)
            d.update(ci95_low=ci[0], ci95_high=ci[1],
                     runs_decode_tok_s=" ".join(f"{x:.3f}" for x in r.runs_decode_tok_s),
                     peak_mem_max_bytes=max(r.peak_mem_bytes.values(), default=None),
                     error_ranks=" ".join(map(str, r.error_ranks)), diff=diff_text(r.diff))
            writer.writerow(["" if d.get(c) is None else d.get(c) for c in cols])
        return buf.getvalue()

    def save(self, path: Path, *, markdown: Path | None = None, csv_path: Path | None = None) -> None:
        """Write atomically, so a crash mid-plan leaves the last complete ledger."""
        _atomic_write(path, self.to_json())
        if markdown is not None:
            _atomic_write(markdown, self.to_markdown())
        if csv_path is not None:
            _atomic_write(csv_path, self.to_csv())


def _md_cells(r: LedgerRow) -> list[str]:
    mean = NA if r.mean_decode_tok_s is None else (
        f"{r.mean_decode_tok_s:.2f} ± {num(r.sd_decode_tok_s)} (n={len(r.runs_decode_tok_s)})")
    ci = NA if r.ci95_decode_tok_s is None else f"{r.ci95_decode_tok_s[0]:.2f}-{r.ci95_decode_tok_s[1]:.2f}"
    delta = "" if r.delta_tok_s is None else f"{r.delta_tok_s:+.2f} ({num(r.delta_pct, '+.1f')}%) vs {r.baseline}"
    if r.p_value is not None:
        delta += f" p={r.p_value:.2g}"
    mem = max(r.peak_mem_bytes.values(), default=None)
    pcie = NA if r.pcie_avg_bytes_s is None else (
        f"{r.pcie_avg_bytes_s / 1e9:.2f}/{num((r.pcie_peak_bytes_s or 0) / 1e9)}")
    notes = []
    if r.dead_end:
        notes.append("DEAD END")
    if r.first_error:
        ranks = f" (ranks {','.join(map(str, r.error_ranks))})" if r.error_ranks else ""
        notes.append(f"{r.first_error}{ranks}")
    if r.confound:
        notes.append(f"confound: {len(r.knobs)} knobs changed")
    if r.share_pct is not None:
        notes.append(f"{r.share_pct:.0f}% of {r.isolates}'s gain")
    cells = [r.name, r.status, mean, ci, delta, r.verdict or NA, num(r.accept_length),
             num(r.startup_s, ".1f"), gib(mem), pcie,
             diff_text(r.diff) or "-", "; ".join(notes)]
    return [c.replace("|", "\\|").replace("\n", " ") for c in cells]


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, mask(text))
