"""Per-trial facts from the recorded samples, and the plain findings a report opens with.

Works without a ledger (``attach`` recordings have none): runs are assigned to trials by
their ``trial`` field, samples and alerts by the trial bands (first TrialState to the next).
GPU figures are split by phase: *serving* (the benchmark running against a ready server)
is what a trial is judged on; *start-up* (weights crossing PCIe at tens of GB/s, memory
filling) is reported apart, so a 40 GB/s weight load never reads as the trial's traffic.
Comparisons are made only between trials that produced figures, each against the base the
ledger compared it with.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from tuiapp.common.numfmt import GIB, NA, num
from tuiapp.common.stats import ci95, mean, sd
from tuiapp.common.verdict import welch_compare
from tuiapp.events import Alert, BenchState, GpuSample, RunDone, ServerState, TrialResult, _Event
from tuiapp.record.markdown import hms, table, text
from tuiapp.record.reading import Recording
from tuiapp.record.svg import Band


@dataclass
class TrialFacts:
    name: str
    x0: float
    x1: float
    decode: list[float] = field(default_factory=list)
    accept: list[float] = field(default_factory=list)
    ttft_s: list[float] = field(default_factory=list)
    pcie_sum_bytes_s: float = 0.0  # tx + rx summed over samples, for the per-GPU mean
    pcie_samples: int = 0
    pcie_peak_bytes_s: float | None = None
    mem_peak_bytes: int | None = None
    mem_total_bytes: int | None = None
    startup_pcie_peak_bytes_s: float | None = None  # busiest GPU's tx + rx while starting
    startup_mem_peak_bytes: int | None = None
    alerts: list[Alert] = field(default_factory=list)

    @property
    def pcie_mean_bytes_s(self) -> float | None:
        return self.pcie_sum_bytes_s / self.pcie_samples if self.pcie_samples else None


def phases(events: list[_Event]) -> Iterator[tuple[_Event, str]]:
    """Each event with the phase it falls in: "startup" (server starting, and the benchmark's
    warm-up), "serving" (server up, benchmark running) or "idle" (between trials, stopping).
    A recording that starts without a ServerState (an attach) is serving from the start."""
    phase = "serving"
    for ev in events:
        if isinstance(ev, ServerState):
            if ev.state == "starting":
                phase = "startup"
            elif ev.state in ("stopping", "stopped", "failed", "unreachable"):
                phase = "idle"
            elif ev.state in ("ready", "running"):
                phase = "serving"  # up (the warm-up that may follow is start-up again)
        elif isinstance(ev, BenchState):
            if ev.state == "warming_up":
                phase = "startup"
            elif ev.state == "running":
                phase = "serving"
            elif ev.state == "done" and phase == "serving":
                phase = "idle"
        yield ev, phase


def trial_facts(rec: Recording, bands: list[Band], alerts: list[Alert]) -> list[TrialFacts]:
    """Per trial, from the events themselves (works without a ledger, e.g. for attach)."""
    facts = [TrialFacts(b.label, b.x0, b.x1) for b in bands] or [TrialFacts("whole recording", 0.0, rec.duration_s)]
    by_name = {f.name: f for f in facts}
    starts = [f.x0 for f in facts]

    def at(x: float) -> TrialFacts:
        k = max(0, bisect_right(starts, x) - 1)
        return facts[k]

    t0 = rec.start_t_s
    for ev, phase in phases(rec.events):
        x = ev.t_s - t0
        if isinstance(ev, RunDone):
            f = by_name.get(ev.trial or "") or at(x)
            if ev.decode_tok_s is not None:
                f.decode.append(ev.decode_tok_s)
            if ev.accept_length is not None:
                f.accept.append(ev.accept_length)
            if ev.ttft_s is not None:
                f.ttft_s.append(ev.ttft_s)
        elif isinstance(ev, GpuSample):
            f = at(x)
            f.mem_total_bytes = ev.mem_total_bytes or f.mem_total_bytes
            both = (ev.pcie_tx_bytes_s + ev.pcie_rx_bytes_s
                    if ev.pcie_tx_bytes_s is not None and ev.pcie_rx_bytes_s is not None else None)
            if phase == "serving":
                if both is not None:
                    f.pcie_sum_bytes_s += both
                    f.pcie_samples += 1
                    f.pcie_peak_bytes_s = both if f.pcie_peak_bytes_s is None else max(f.pcie_peak_bytes_s, both)
                if ev.mem_used_bytes is not None:
                    f.mem_peak_bytes = max(f.mem_peak_bytes or 0, ev.mem_used_bytes)
            elif phase == "startup":
                if both is not None:
                    f.startup_pcie_peak_bytes_s = max(f.startup_pcie_peak_bytes_s or 0.0, both)
                if ev.mem_used_bytes is not None:
                    f.startup_mem_peak_bytes = max(f.startup_mem_peak_bytes or 0, ev.mem_used_bytes)
    for a in alerts:
        at(a.t_s - t0).alerts.append(a)
    return facts


def per_trial_section(facts: list[TrialFacts]) -> list[str]:
    def gib(value: int | None, total: int | None = None) -> str:
        if value is None:
            return NA
        return f"{value / GIB:.1f}" + (f" / {total / GIB:.1f}" if total else "")

    def gbs(value: float | None) -> str:
        return num(value / 1e9 if value is not None else None)

    rows = []
    for f in facts:
        m, sdev, ci = mean(f.decode), sd(f.decode), ci95(f.decode)
        pcie = f.pcie_mean_bytes_s
        rows.append([
            f.name, f"{hms(f.x0)}-{hms(f.x1)}", str(len(f.decode)),
            NA if m is None else f"{m:.2f} ± {num(sdev)}",
            f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else NA,
            num(mean(f.accept)), num(mean(f.ttft_s) * 1000 if f.ttft_s else None, ".1f"),
            gbs(pcie), gbs(f.pcie_peak_bytes_s), gib(f.mem_peak_bytes, f.mem_total_bytes),
            gbs(f.startup_pcie_peak_bytes_s), gib(f.startup_mem_peak_bytes),
            ", ".join(f"{a.alert_kind} (ranks {','.join(map(str, a.ranks)) or '-'})" for a in f.alerts) or "-",
        ])
    return table(["trial", "span", "runs", "decode tok/s (mean ± sd)", "95% CI", "accept len", "TTFT ms",
                   "serving: PCIe TX+RX GB/s per GPU (mean)", "serving: PCIe TX+RX GB/s (busiest GPU)",
                   "serving: peak mem GiB", "start-up: PCIe TX+RX GB/s (busiest GPU)", "start-up: peak mem GiB",
                   "alerts"], rows)


def bases(facts: list[TrialFacts], results: list[TrialResult]) -> dict[str, TrialFacts]:
    """Each trial with figures -> the trial with figures it is compared with: its ledger
    base (the row's ``baseline``); without a ledger, the first trial that has figures. A
    trial whose ledger base has no figures (it failed) is compared with nothing."""
    measured = {f.name: f for f in facts if f.decode}
    rows = {r.name: r.row for r in results}
    plan_base = next((n for n, row in rows.items() if row.get("is_baseline") or row.get("verdict") == "baseline"),
                     None)
    default = measured.get(plan_base) if plan_base else next(iter(measured.values()), None)
    out = {}
    for name, f in measured.items():
        row = rows.get(name, {})
        if row.get("is_baseline") or name == plan_base:
            continue
        # the row's own base when the ledger says one; an older ledger without it: the plan's
        base = measured.get(row["baseline"]) if row.get("baseline") else default
        if base is not None and base is not f:
            out[name] = base
    return out


def findings(facts: list[TrialFacts], start_t_s: float, results: list[TrialResult]) -> list[str]:
    """Plain statements a reader can check against the tables."""
    out: list[str] = []
    measured = [f for f in facts if f.decode]
    if not measured:
        return ["- No benchmark run completed: nothing to compare."]
    if len(measured) == 1:
        only = measured[0]
        ci = ci95(only.decode)
        out.append(f"- Decode: {mean(only.decode):.2f} tok/s mean, sd {num(sd(only.decode))}, 95% CI "
                   + (f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else NA) + f" (n={len(only.decode)}).")
    else:
        best = max(measured, key=lambda f: mean(f.decode) or 0.0)
        out.append(f"- Fastest: **{text(best.name)}**, {mean(best.decode):.2f} tok/s decode (n={len(best.decode)}).")
    against = bases(facts, results)
    for f in measured:
        base = against.get(f.name)
        if base is None:
            continue
        delta = (mean(f.decode) or 0.0) - (mean(base.decode) or 0.0)
        pct = 100 * delta / (mean(base.decode) or 1.0)
        out.append(f"- {text(f.name)} vs {text(base.name)}: {delta:+.2f} tok/s ({pct:+.1f}%), "
                   f"{welch_compare(base.decode, f.decode).verdict} (Welch, 5%; n={len(base.decode)} vs {len(f.decode)}).")
    for f in measured:
        base = against.get(f.name)
        mine, theirs = f.pcie_mean_bytes_s, base.pcie_mean_bytes_s if base is not None else None
        if mine is None or theirs is None or min(mine, theirs) <= 0:
            continue
        ratio = mine / theirs
        if ratio >= 2 or ratio <= 0.5:
            out.append(f"- PCIe while serving: {text(f.name)} moves {mine / 1e9:.2f} GB/s per GPU on average, "
                       + (f"{ratio:.0f}x" if ratio >= 2 else f"1/{1 / ratio:.0f} of")
                       + f" {text(base.name)}'s {theirs / 1e9:.2f} GB/s.")
    for f in facts:
        for a in f.alerts:
            if a.severity == "error":
                ranks = ",".join(map(str, a.ranks)) or "-"
                first = a.message.splitlines()[0] if a.message else ""
                out.append(f"- {text(f.name)} failed: {text(a.alert_kind)} on ranks {ranks} at "
                           f"{hms(a.t_s - start_t_s)}: {text(first)}")
    for res in results:
        if res.row.get("confound"):
            out.append(f"- {text(res.name)}: {text(res.row['confound'])}")
    return out
