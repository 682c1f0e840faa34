"""A recording as a Markdown document to paste into an optimisation plan, with SVG charts.

Sections: what was recorded (header facts), the ledger (TrialResult rows), the summary
the headless job printed, every run, every alert, per-GPU peaks, and links to the charts
(tok/s per trial, acceptance, PCIe RX/TX per GPU, memory per GPU) written beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuiapp.common.atomic_write import write_atomic
from tuiapp.common.difftext import diff_text
from tuiapp.common.numfmt import GIB, NA, num
from tuiapp.common.redact import mask
from tuiapp.events import (
    Alert,
    GpuSample,
    PointDone,
    RunDone,
    ServerInfo,
    ServerStats,
    TrialResult,
    TrialState,
    _Event,
)
from tuiapp.record.acceptance_section import acceptance_section
from tuiapp.record.curves import POINT_HEAD, curve_chart, point_rows
from tuiapp.record.findings import findings, per_trial_section, phases, trial_facts
from tuiapp.record.markdown import Markup, code_block, code_span, fold, hms, table, text
from tuiapp.record.printer import NullStream, Printer
from tuiapp.record.reading import Recording
from tuiapp.record.svg import Band, Series, line_chart


def _utc(t_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t_s))


def _spec_text(infos: list[ServerInfo]) -> str:
    configs = []
    for info in infos:
        text = "off"
        if info.speculative_algorithm:
            parts = [f"{label} {value}" for label, value in (
                ("steps", info.speculative_num_steps), ("topk", info.speculative_eagle_topk),
                ("draft tokens", info.speculative_num_draft_tokens)) if value is not None]
            text = info.speculative_algorithm + (f" ({', '.join(parts)})" if parts else "")
        if text not in configs:
            configs.append(text)
    if len(configs) > 1:
        return "varies by launch: " + "; ".join(configs)
    return configs[0] if configs else "unknown"


def trial_bands(events: list[_Event], start_t_s: float, end_s: float) -> list[Band]:
    """One band per trial, from its first TrialState to the next trial's."""
    starts: list[tuple[float, str]] = []
    for ev in events:
        if isinstance(ev, TrialState) and (not starts or starts[-1][1] != ev.name):
            if ev.name not in {name for _, name in starts}:
                starts.append((ev.t_s - start_t_s, ev.name))
    return [
        Band(x0, starts[k + 1][0] if k + 1 < len(starts) else end_s, name)
        for k, (x0, name) in enumerate(starts)
    ]


def _charts(rec: Recording, bands: list[Band], marks: list[tuple[float, str]]) -> dict[str, tuple[str, str]]:
    """file suffix -> (title, svg)."""
    t0 = rec.start_t_s
    runs: dict[str, Series] = {}
    server_rate = Series("server gen tok/s (log)")
    accept_server = Series("accept length (server)")
    accept_runs = Series("accept length (runs)", markers=True)
    pcie: dict[str, dict[int, Series]] = {"rx": {}, "tx": {}}
    mem: dict[int, Series] = {}
    mem_total: dict[int, float] = {}
    for ev in rec.events:
        x = ev.t_s - t0
        if isinstance(ev, RunDone) and ev.decode_tok_s is not None:
            name = ev.trial or "runs"
            runs.setdefault(name, Series(f"{name} decode tok/s", markers=True)).points.append((x, ev.decode_tok_s))
            if ev.accept_length is not None:
                accept_runs.points.append((x, ev.accept_length))
        elif isinstance(ev, ServerStats) and ev.source == "log_decode":
            if ev.gen_throughput_tok_s is not None:
                server_rate.points.append((x, ev.gen_throughput_tok_s))
            if ev.accept_length is not None:
                accept_server.points.append((x, ev.accept_length))
        elif isinstance(ev, GpuSample):
            for direction in ("rx", "tx"):
                value = getattr(ev, f"pcie_{direction}_bytes_s")
                if value is not None:
                    pcie[direction].setdefault(ev.index, Series(f"GPU {ev.index}")).points.append((x, value / 1e9))
            if ev.mem_used_bytes is not None:
                mem.setdefault(ev.index, Series(f"GPU {ev.index}")).points.append((x, ev.mem_used_bytes / GIB))
            if ev.mem_total_bytes:
                mem_total[ev.index] = ev.mem_total_bytes / GIB
    charts = {
        "tok_s": ("Decode tok/s per trial", line_chart(
            "Decode tok/s over time, per trial", [*runs.values(), server_rate], y_label="tok/s", bands=bands, marks=marks)),
        "acceptance": ("Speculative acceptance", line_chart(
            "Speculative acceptance length over time", [accept_server, accept_runs],
            y_label="accepted tokens / step", bands=bands, marks=marks)),
        "pcie_rx": ("PCIe RX per GPU", line_chart(
            "PCIe RX per GPU (host to device)", [pcie["rx"][i] for i in sorted(pcie["rx"])],
            y_label="GB/s", bands=bands, marks=marks)),
        "pcie_tx": ("PCIe TX per GPU", line_chart(
            "PCIe TX per GPU (device to host)", [pcie["tx"][i] for i in sorted(pcie["tx"])],
            y_label="GB/s", bands=bands, marks=marks)),
        "memory": ("Memory used per GPU", line_chart(
            "GPU memory used" + (f" (of {max(mem_total.values()):.1f} GiB)" if mem_total else ""),
            [mem[i] for i in sorted(mem)], y_label="GiB", bands=bands, marks=marks,
            hlines=[(max(mem_total.values()), "total")] if mem_total else ())),
    }
    return charts


def _gpu_rows(rec: Recording) -> list[list[str]]:
    """Per GPU: peaks while serving (what the trials are judged on), start-up's apart."""
    peaks: dict[int, dict[str, Any]] = {}
    for ev, phase in phases(rec.events):
        if not isinstance(ev, GpuSample):
            continue
        p = peaks.setdefault(ev.index, {"name": ev.name, "mem": None, "total": None, "rx": None, "tx": None,
                                        "util": [], "link": None, "s_mem": None, "s_rx": None})
        p["name"] = ev.name or p["name"]
        if phase == "serving":
            values = (("mem", ev.mem_used_bytes), ("rx", ev.pcie_rx_bytes_s), ("tx", ev.pcie_tx_bytes_s))
        elif phase == "startup":
            values = (("s_mem", ev.mem_used_bytes), ("s_rx", ev.pcie_rx_bytes_s))
        else:
            values = ()
        for key, value in values:
            if value is not None and (p[key] is None or value > p[key]):
                p[key] = value
        p["total"] = ev.mem_total_bytes or p["total"]
        if ev.util_pct is not None and phase == "serving":
            p["util"].append(ev.util_pct)
        if ev.pcie_gen is not None:
            p["link"] = f"Gen{ev.pcie_gen} x{ev.pcie_width}" + (
                f" (max Gen{ev.pcie_gen_max} x{ev.pcie_width_max})" if ev.pcie_gen_max else "")

    def gib(v: Any) -> str:
        return f"{v / GIB:.1f}" if v is not None else NA

    def gbs(v: Any) -> str:
        return f"{v / 1e9:.2f}" if v is not None else NA

    return [
        [str(i), p["name"] or NA, f"{gib(p['mem'])} / {gib(p['total'])}", gbs(p["rx"]), gbs(p["tx"]),
         f"{sum(p['util']) / len(p['util']):.0f}" if p["util"] else NA, gib(p["s_mem"]), gbs(p["s_rx"]),
         p["link"] or NA]
        for i, p in sorted(peaks.items())
    ]


def _ledger_rows(results: list[TrialResult]) -> list[list[str]]:
    latest: dict[str, TrialResult] = {}
    for res in results:
        latest[res.name] = res  # a resumed trial's later result replaces the earlier
    rows = []
    for res in latest.values():
        row = res.row
        n = len(row.get("runs_decode_tok_s") or [])
        mean = row.get("mean_decode_tok_s")
        ci = row.get("ci95_decode_tok_s")
        delta = row.get("delta_tok_s")
        notes = [x for x in (row.get("first_error"), row.get("confound")) if x]
        rows.append([
            res.name, res.status,
            f"{num(mean)} ± {num(row.get('sd_decode_tok_s'))}" + (f" (n={n})" if n else ""),
            f"{ci[0]:.2f}-{ci[1]:.2f}" if isinstance(ci, (list, tuple)) and len(ci) == 2 else NA,
            "" if delta is None else f"{delta:+.2f} ({num(row.get('delta_pct'), '+.1f')}%)",
            row.get("verdict") or NA, num(row.get("accept_length")),
            diff_text(row.get("diff")) or "-", "; ".join(str(x) for x in notes),
        ])
    return rows


Fold = Callable[[str, list[str]], list[str]]


def build_report(rec: Recording, chart_name: Callable[[str], str], folded: Fold = fold) -> tuple[str, dict[str, str]]:
    """(markdown, {file name: svg}); ``chart_name(suffix)`` names each chart file, ``folded(summary,
    lines)`` folds a long part (a ``<details>`` block). Every text from the recording goes through
    :mod:`tuiapp.record.markdown`'s escaping."""
    printer = Printer(NullStream())
    for ev in rec.events:
        printer.handle(ev)
    header = rec.header
    infos = [e for e in rec.events if isinstance(e, ServerInfo)]
    info = infos[-1] if infos else None
    gpus = header.get("gpus") or []
    gpu_names = sorted({g.get("name") for g in gpus if isinstance(g, dict) and g.get("name")})
    if not gpu_names:
        gpu_names = sorted({e.name for e in rec.events if isinstance(e, GpuSample) and e.name})
    gpu_count = len(gpus) or len({e.index for e in rec.events if isinstance(e, GpuSample)})
    title = header.get("title") or rec.path.name
    lines = [f"# tuiapp report: {text(title)}", ""]
    facts = [
        ("Recorded", f"{_utc(rec.start_t_s)}, {hms(rec.duration_s)} long"),
        ("Host", header.get("host")),
        ("GPUs", f"{gpu_count} x {', '.join(gpu_names) or 'unknown'}" if gpu_count else "none recorded"),
        ("SGLang", header.get("sglang_version") or (info.version if info else None) or "unknown"),
        ("Model", info.model_path if info and info.model_path else "unknown"),
        ("Speculative", _spec_text(infos)),
        ("Command", code_span(" ".join(str(a) for a in header.get("argv") or []))),
        ("tuiapp", header.get("tool_version")),
        ("Recording", Markup(f"{code_span(rec.path.name)}, {len(rec.events)} events"
                             + (f", {rec.skipped_lines} corrupt or truncated lines skipped" if rec.skipped_lines
                                else ""))),
    ]
    lines += table(["", ""], [[Markup(f"**{k}**"), v] for k, v in facts]) + [""]

    results = [e for e in rec.events if isinstance(e, TrialResult)]
    if results:
        lines += ["## Ledger", ""]
        lines += table(["trial", "status", "decode tok/s (mean ± sd)", "95% CI", "vs baseline", "verdict",
                         "accept len", "diff vs baseline", "notes"], _ledger_rows(results)) + [""]

    bands = trial_bands(rec.events, rec.start_t_s, rec.duration_s)
    alerts: list[Alert] = list(printer.alerts.values())
    facts = trial_facts(rec, bands, alerts)
    lines += ["## Findings", "", *findings(facts, rec.start_t_s, list({r.name: r for r in results}.values())), ""]
    lines += ["## Per trial (from the recorded samples)", "", *per_trial_section(facts), ""]
    lines += ["## Summary (as the headless job printed it)", "", *code_block(printer.summary()), ""]

    lines += ["## Runs", ""]
    if printer.runs:
        runs_table = table(
            ["run", "trial", "time", "requests", "errors", "decode tok/s", "output tok/s", "TTFT ms", "TPOT ms",
             "accept len"],
            [[str(r.run_index), r.trial or "-", hms(r.t_s - rec.start_t_s), str(r.requests), str(r.errors),
              num(r.decode_tok_s), num(r.output_tok_s), num(r.ttft_s * 1000 if r.ttft_s is not None else None, ".1f"),
              num(r.tpot_s * 1000 if r.tpot_s is not None else None), num(r.accept_length)]
             for r in printer.runs],
        )
        lines += folded(f"{len(printer.runs)} runs", runs_table) if len(printer.runs) > 30 else [*runs_table, ""]
    else:
        lines += ["No benchmark run completed in this recording.", ""]

    lines += ["## Speculative acceptance per draft position", "", *acceptance_section(rec.events)]

    points = [e for e in rec.events if isinstance(e, PointDone)]
    curve_svgs: dict[str, str] = {}
    if points:
        # a sweep, open loop or a max-load search: the load curve is the result
        lines += ["## Load curves", "", *table(POINT_HEAD, point_rows(points)), ""]
        for metric in ("ttft", "tpot"):
            name = chart_name(f"curve_{metric}")
            curve_svgs[name] = curve_chart(f"{metric.upper()} vs aggregate output tok/s, per trial (p50 solid,"
                                           " p99 dashed)", points, metric=metric)
            lines += [f"![{metric.upper()} vs throughput]({name})", ""]

    lines += ["## Alerts", ""]
    if alerts:
        lines += table(
            ["time", "kind", "severity", "ranks", "log line", "source", "message"],
            [[hms(a.t_s - rec.start_t_s), a.alert_kind, a.severity,
              ",".join(map(str, a.ranks)) or ("DP " + ",".join(map(str, a.dp_ranks)) if a.dp_ranks else "-"),
              str(a.first_line) if a.first_line is not None else "-", a.source, a.message] for a in alerts],
        ) + [""]
        for a in alerts:
            if a.traceback:
                lines += folded(f"{a.alert_kind} at {hms(a.t_s - rec.start_t_s)}: traceback", code_block(a.traceback))
    else:
        lines += ["No alerts.", ""]

    gpu_rows = _gpu_rows(rec)
    if gpu_rows:
        lines += ["## GPUs (peaks)", "",
                  "Serving: while the benchmark ran. Start-up (weights loading, warm-up) apart: its PCIe "
                  "rate is the weights crossing the link, not the trial's traffic.", ""]
        lines += table(["GPU", "name", "serving: peak memory GiB (used / total)", "serving: peak PCIe RX GB/s",
                         "serving: peak PCIe TX GB/s", "serving: mean util %", "start-up: peak memory GiB",
                         "start-up: peak PCIe RX GB/s", "PCIe link"], gpu_rows) + [""]

    svgs: dict[str, str] = dict(curve_svgs)
    lines += ["## Charts", ""]
    marks = [(a.t_s - rec.start_t_s, a.alert_kind) for a in alerts]
    for suffix, (chart_title, svg) in _charts(rec, bands, marks).items():
        name = chart_name(suffix)
        svgs[name] = svg
        lines += [f"### {chart_title}", "", f"![{chart_title}]({name})", ""]
    return "\n".join(lines).rstrip() + "\n", svgs


def write_report(rec: Recording, out: Path) -> list[Path]:
    """Write ``out`` and its charts beside it (``<stem>.<chart>.svg``); returns every path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    markdown, svgs = build_report(rec, lambda suffix: f"{stem}.{suffix}.svg")
    written = []
    for name, svg in svgs.items():
        written.append(write_atomic(out.parent / name, svg))
    write_atomic(out, mask(markdown))
    return [out, *written]
