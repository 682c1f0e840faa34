"""Per-trial facts from the recorded samples, and the plain findings a report opens with.

Works without a ledger (``attach`` recordings have none): runs are assigned to trials by
their ``trial`` field, samples and alerts by the trial bands (first TrialState to the next).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from tuiapp.common.stats import ci95, mean, sd, verdict
from tuiapp.events import Alert, GpuSample, RunDone, TrialResult
from tuiapp.record.markdown import GIB, hms, num, table
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
    alerts: list[Alert] = field(default_factory=list)


def trial_facts(rec: Recording, bands: list[Band], alerts: list[Alert]) -> list[TrialFacts]:
    """Per trial, from the events themselves (works without a ledger, e.g. for attach)."""
    facts = [TrialFacts(b.label, b.x0, b.x1) for b in bands] or [TrialFacts("whole recording", 0.0, rec.duration_s)]
    by_name = {f.name: f for f in facts}
    starts = [f.x0 for f in facts]

    def at(x: float) -> TrialFacts:
        k = max(0, bisect_right(starts, x) - 1)
        return facts[k]

    t0 = rec.start_t_s
    for ev in rec.events:
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
            if ev.pcie_tx_bytes_s is not None and ev.pcie_rx_bytes_s is not None:
                both = ev.pcie_tx_bytes_s + ev.pcie_rx_bytes_s
                f.pcie_sum_bytes_s += both
                f.pcie_samples += 1
                f.pcie_peak_bytes_s = both if f.pcie_peak_bytes_s is None else max(f.pcie_peak_bytes_s, both)
            if ev.mem_used_bytes is not None:
                f.mem_peak_bytes = max(f.mem_peak_bytes or 0, ev.mem_used_bytes)
            f.mem_total_bytes = ev.mem_total_bytes or f.mem_total_bytes
    for a in alerts:
        at(a.t_s - t0).alerts.append(a)
    return facts


def per_trial_section(facts: list[TrialFacts]) -> list[str]:
    rows = []
    for f in facts:
        m, sdev, ci = mean(f.decode), sd(f.decode), ci95(f.decode)
        pcie = f.pcie_sum_bytes_s / f.pcie_samples if f.pcie_samples else None
        rows.append([
            f.name, f"{hms(f.x0)}-{hms(f.x1)}", str(len(f.decode)),
            "n/a" if m is None else f"{m:.2f} ± {num(sdev)}",
            f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "n/a",
            num(mean(f.accept)), num(mean(f.ttft_s) * 1000 if f.ttft_s else None, ".1f"),
            num(pcie / 1e9 if pcie is not None else None),
            num(f.pcie_peak_bytes_s / 1e9 if f.pcie_peak_bytes_s is not None else None),
            "n/a" if f.mem_peak_bytes is None else f"{f.mem_peak_bytes / GIB:.1f}"
            + (f" / {f.mem_total_bytes / GIB:.1f}" if f.mem_total_bytes else ""),
            ", ".join(f"{a.alert_kind} (ranks {','.join(map(str, a.ranks)) or '-'})" for a in f.alerts) or "-",
        ])
    return table(["trial", "span", "runs", "decode tok/s (mean ± sd)", "95% CI", "accept len", "TTFT ms",
                   "PCIe TX+RX GB/s per GPU (mean)", "PCIe TX+RX GB/s (busiest GPU)", "peak mem GiB", "alerts"], rows)


def findings(facts: list[TrialFacts], start_t_s: float, results: list[TrialResult]) -> list[str]:
    """Plain statements a reader can check against the tables."""
    out: list[str] = []
    measured = [f for f in facts if f.decode]
    if not measured:
        return ["- No benchmark run completed: nothing to compare."]
    # the ledger's baseline when there is one; else the first trial that ran
    base_names = [r.name for r in results if r.row.get("is_baseline") or r.row.get("verdict") == "baseline"]
    base = next((f for f in measured if base_names and f.name == base_names[0]), measured[0])
    if len(measured) == 1:
        ci = ci95(base.decode)
        out.append(f"- Decode: {mean(base.decode):.2f} tok/s mean, sd {num(sd(base.decode))}, 95% CI "
                   + (f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "n/a") + f" (n={len(base.decode)}).")
    else:
        best = max(measured, key=lambda f: mean(f.decode) or 0.0)
        out.append(f"- Fastest: **{best.name}**, {mean(best.decode):.2f} tok/s decode (n={len(best.decode)}).")
    for f in measured:
        if f is base:
            continue
        delta = (mean(f.decode) or 0.0) - (mean(base.decode) or 0.0)
        pct = 100 * delta / (mean(base.decode) or 1.0)
        out.append(f"- {f.name} vs {base.name}: {delta:+.2f} tok/s ({pct:+.1f}%), "
                   f"{verdict(base.decode, f.decode)} (Welch, 5%; n={len(base.decode)} vs {len(f.decode)}).")
    pcie = [(f.pcie_sum_bytes_s / f.pcie_samples, f) for f in facts if f.pcie_samples]
    if len(pcie) > 1:
        top_bytes_s, top = max(pcie, key=lambda p: p[0])
        low_bytes_s, low = min(pcie, key=lambda p: p[0])
        if top_bytes_s > 2 * max(low_bytes_s, 1.0):
            out.append(f"- PCIe: {top.name} moves {top_bytes_s / 1e9:.2f} GB/s per GPU on average, "
                       f"{top_bytes_s / max(low_bytes_s, 1.0):.0f}x {low.name}'s {low_bytes_s / 1e9:.2f} GB/s.")
    for f in facts:
        for a in f.alerts:
            if a.severity == "error":
                ranks = ",".join(map(str, a.ranks)) or "-"
                first = a.message.splitlines()[0] if a.message else ""
                out.append(f"- {f.name} failed: {a.alert_kind} on ranks {ranks} at "
                           f"{hms(a.t_s - start_t_s)}: {first}")
    for res in results:
        if res.row.get("confound"):
            out.append(f"- {res.name}: {res.row['confound']}")
    return out
