"""The ledger: one row per trial, what it proved, saved after every trial.

Each trial is compared with its reference (``baseline`` field: the trial it builds on,
default the plan's baseline) by tuiapp.common.verdict, the one owner of verdicts: Welch's
t test on the per-run decode tok/s, "faster"/"slower" only at p < 0.05 and at least
``min_effect_pct`` (default 0.5%). A sweep trial is judged at its headline point (the
plan's ``headline`` load, else the highest load that met the SLO, else the highest load),
never on a pool of all loads, and point by point with Holm's correction. A trial whose
measurement is invalid (every request failed, zero output tokens, NaN) has verdict
"invalid" and can never rank best; one that fails more requests than its reference beyond
chance is "worse" on errors. A trial that failed, is invalid, slower or worse on errors is a
dead end; one refused by preflight was never tried, so it is not (and ``--resume`` tries it
again). Rows keep their run figures, so a ``--resume``d plan compares new trials with the
baseline measured before.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tuiapp.common import stats
from tuiapp.common import verdict as judge
from tuiapp.common.acceptance_compare import compare_positions
from tuiapp.common.atomic_write import write_atomic
from tuiapp.common.difftext import diff_text
from tuiapp.common.numfmt import NA, gib, num
from tuiapp.common.redact import mask
from tuiapp.record.markdown import cell
from tuiapp.trials.curves import curve_lines

OK = "ok"
NOT_RUN = "preflight"  # refused before launch: a plan or install problem, not an experiment
MIN_EFFECT_PCT = judge.MIN_EFFECT_PCT


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
    # speculative acceptance per draft position (1 first), pooled and per run, and the Welch
    # verdict per position against the reference (tuiapp.common.acceptance_compare)
    accept_by_position: list[float | None] = Field(default_factory=list)
    runs_accept_by_position: list[list[float]] = Field(default_factory=list)
    accept_position_verdicts: list[dict[str, Any]] = Field(default_factory=list)
    startup_s: float | None = None
    # the server's own start-up breakdown (tuiapp.common.startup_phases.as_json): total_s, phases_s...
    server_startup: dict[str, Any] = Field(default_factory=dict)
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
    headline: str | None = None  # a sweep trial's headline load ("concurrency=64"): its runs are that point's
    requests: int = 0  # benchmark requests sent (cancelled ones aside)
    failed_requests: int = 0
    errors_by_reason: dict[str, int] = Field(default_factory=dict)  # outcome -> failed requests
    output_tokens: int | None = None
    invalid: list[str] = Field(default_factory=list)  # why its measurement cannot be judged
    error_verdict: str | None = None  # worse | within noise | n/a: failed requests vs its reference
    output_digests: dict[str, str] = Field(default_factory=dict)  # bench check_output: prompt -> digest
    output_mismatch: str | None = None  # its output at temperature 0 differs from its reference's
    # The Slurm job behind the row (trials --slurm; tuiapp.slurm.runner.fill_slurm_fields)
    slurm_job_id: str | None = None
    slurm_state: str | None = None  # COMPLETED | FAILED | TIMEOUT | CANCELLED | OUT_OF_MEMORY | NODE_FAIL ...
    slurm_nodes: list[str] = Field(default_factory=list)
    slurm_queue_wait_s: float | None = None  # submit to start, as Slurm stamps them
    slurm_reason: str | None = None  # why tuiapp cancelled it (the first fatal incident)
    slurm_cancel_after_alert_s: float | None = None  # that incident's alert to scancel's return
    slurm_submit_to_first_token_s: float | None = None



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
                 if not p.get("search_probe") and judge.meets_goal(p)[0]]
        probes = [float(p.get("concurrency") or p.get("request_rate") or 0) for p in row.points
                  if p.get("search_probe") and judge.meets_goal(p)[0]]
        return [max(loads + probes)] if loads or probes else []
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
            ref = self.rows.get(row.baseline) if row.baseline else self.baseline
            if row.is_baseline:
                row.verdict = ("invalid" if row.invalid else "baseline") if row.status == OK else None
                row.dead_end = row.status not in (OK, NOT_RUN) or bool(row.invalid)
                continue
            row.verdict = row.p_value = row.delta_tok_s = row.delta_pct = row.error_verdict = None
            row.point_verdicts, row.crossings = [], []
            ref_ok = ref is not None and ref.status == OK
            row.output_mismatch = _output_mismatch(row, ref) if ref_ok else None  # type: ignore[arg-type]
            if row.status == OK and ref_ok and ref.requests and row.requests:  # type: ignore[union-attr]
                row.error_verdict = judge.error_rate_verdict(ref.failed_requests, ref.requests,  # type: ignore[union-attr]
                                                             row.failed_requests, row.requests)[0]
            if row.status == OK and (row.invalid or row.output_mismatch):
                row.verdict = "invalid"
            elif row.status == OK and ref_ok and row.points and ref.points:  # type: ignore[union-attr]
                row.point_verdicts = judge.compare_points(ref.points, row.points,  # type: ignore[union-attr]
                                                          min_effect_pct=self.min_effect_pct)
                row.crossings = judge.crossings(row.point_verdicts)
                self._headline_verdict(row, ref)  # type: ignore[arg-type]
            elif row.status == OK and ref_ok and ref.runs_decode_tok_s and row.runs_decode_tok_s:  # type: ignore[union-attr]
                c = judge.welch_compare(ref.runs_decode_tok_s, row.runs_decode_tok_s,  # type: ignore[union-attr]
                                        min_effect_pct=self.min_effect_pct)
                self._fill_verdict(row, c)
            row.accept_position_verdicts = (
                compare_positions(ref.runs_accept_by_position, row.runs_accept_by_position,  # type: ignore[union-attr]
                                  min_effect_pct=self.min_effect_pct)
                if row.status == OK and ref_ok and ref.runs_accept_by_position and row.runs_accept_by_position  # type: ignore[union-attr]
                else [])
            row.dead_end = (row.status not in (OK, NOT_RUN) or row.verdict in ("slower", "invalid")
                            or row.error_verdict == "worse")
        for row in self.rows.values():
            row.share_pct = None
            combined = self.rows.get(row.isolates or "")
            if row.knob and combined and combined.delta_tok_s and row.delta_tok_s is not None:
                row.share_pct = 100.0 * row.delta_tok_s / combined.delta_tok_s

    @staticmethod
    def _fill_verdict(row: LedgerRow, c: judge.Comparison) -> None:
        row.verdict = c.verdict
        row.p_value = c.p_value
        if c.base_mean is not None and c.new_mean is not None:
            row.delta_tok_s = c.new_mean - c.base_mean
            row.delta_pct = 100.0 * row.delta_tok_s / c.base_mean if c.base_mean else None

    def _headline_verdict(self, row: LedgerRow, ref: LedgerRow) -> None:
        """A sweep trial against its reference at the trial's headline load, on decode tok/s
        per run there, with Holm's correction over all the loads both curves have."""
        by_load = judge.compare_points(ref.points, row.points, metric="decode_tok_s", min_effect_pct=self.min_effect_pct)
        at = next((v for v in by_load if row.headline and _load_key(v) == row.headline), None)
        if at is None or at["verdict"] == "missing":
            row.verdict = f"n/a (the reference has no point at {row.headline or 'the headline load'})"
            return
        row.verdict, row.p_value = at["verdict"], at["p_value"]
        if at.get("base_mean") is not None and at.get("new_mean") is not None:
            row.delta_tok_s = at["new_mean"] - at["base_mean"]
            row.delta_pct = at["delta_pct"]

    def rank(self, objective: str = "decode_tok_s") -> list[LedgerRow]:
        """Rank the rows that ran by their mean ``objective`` (per-run figures), best first; each
        is compared with the best by tuiapp.common.verdict.welch_compare, so a difference within
        noise says so. An invalid row, or one that fails more requests than its reference
        (error verdict "worse"), can never be best: it ranks after every row that is neither."""
        def runs_of(r: LedgerRow) -> list[float]:
            return objective_values(r, objective)

        def demoted(r: LedgerRow) -> str | None:
            if r.invalid or r.output_mismatch:
                return "invalid"
            return "more errors" if r.error_verdict == "worse" else None

        ran = [r for r in self.rows.values() if r.status == OK and runs_of(r)]
        ranked = sorted(ran, key=lambda r: (demoted(r) is not None, -(stats.mean(runs_of(r)) or 0.0)))
        for row in self.rows.values():
            row.rank = row.vs_best = None
        if not ranked:
            return []
        best = ranked[0]
        best_mean = stats.mean(runs_of(best))
        for place, row in enumerate(ranked, 1):
            row.rank = place
            if (why := demoted(row)) is not None:
                row.vs_best = why
                continue
            if row is best:
                row.vs_best = "best"
                continue
            if objective == "max_load":  # one value a trial: no test, only the order
                row.vs_best = "lower" if stats.mean(runs_of(row)) < best_mean else "best"
                continue
            c = judge.welch_compare(runs_of(best), runs_of(row), min_effect_pct=self.min_effect_pct)
            row.vs_best = "slower" if c.verdict == "slower" else "within noise"
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
                "knob", "share_pct", "rank", "vs_best", "headline", "requests", "failed_requests",
                "errors_by_reason", "invalid", "error_verdict", "note"]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in self.rows.values():
            d = r.model_dump(mode="json")
            ci = r.ci95_decode_tok_s or (None, None)
            d.update(ci95_low=ci[0], ci95_high=ci[1],
                     runs_decode_tok_s=" ".join(f"{x:.3f}" for x in r.runs_decode_tok_s),
                     peak_mem_max_bytes=max(r.peak_mem_bytes.values(), default=None),
                     error_ranks=" ".join(map(str, r.error_ranks)), diff=diff_text(r.diff),
                     errors_by_reason=" ".join(f"{k}={v}" for k, v in r.errors_by_reason.items()),
                     invalid="; ".join([*r.invalid, *([r.output_mismatch] if r.output_mismatch else [])]))
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
    if r.invalid or r.output_mismatch:
        notes.append("invalid: " + ", ".join([*r.invalid, *([r.output_mismatch] if r.output_mismatch else [])]))
    if r.headline:
        notes.append(f"headline {r.headline.replace('_', ' ')}")
    if r.failed_requests:
        reasons = ", ".join(f"{n} {why}" for why, n in r.errors_by_reason.items())
        worse = " (worse than its reference)" if r.error_verdict == "worse" else ""
        notes.append(f"{r.failed_requests} of {r.requests} requests failed{worse}: {reasons}")
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
    # the notes carry a first error from a server's log: hostile text, escaped (record/markdown);
    # the rest is the plan's and tuiapp's own, kept readable in a terminal
    return [*(c.replace("|", "\\|").replace("\n", " ") for c in cells[:-1]), cell(cells[-1])]


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, mask(text))


def _load_key(point: dict[str, Any]) -> str | None:
    """"concurrency=64" / "request_rate=8": how a row names its headline load."""
    load = judge.load_of(point)
    return None if load is None else f"{load[0]}={load[1]:g}"


def _output_mismatch(row: LedgerRow, ref: LedgerRow) -> str | None:
    """bench check_output: the prompts both checked whose output differs from the reference's."""
    common = sorted(set(row.output_digests) & set(ref.output_digests), key=int)
    differ = [k for k in common if row.output_digests[k] != ref.output_digests[k]]
    if not differ:
        return None
    return f"output differs from {ref.name}'s at temperature 0 on {len(differ)} of {len(common)} prompts"
