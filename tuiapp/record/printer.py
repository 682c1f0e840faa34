"""The headless printer: plain, greppable progress lines for a log file, then a summary.

One line per fact worth reading later (server state, each run, each alert, trials,
notes), each starting with the event's local time and a fixed-width tag; GPU samples are
folded into one compact ``gpus`` line per ``gpu_every_s`` of event time. Everything,
the summary included, derives from the events alone, so replaying a recording through
a Printer prints what the live job printed.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, TextIO

from tuiapp.common import acceptance, startup_phases
from tuiapp.common.labels import AGGREGATE, PER_STREAM, REQ_S
from tuiapp.common.numfmt import GIB, num
from tuiapp.common.redact import mask
from tuiapp.common.stats import ci95, mean, sd
from tuiapp.events import (
    Alert,
    BenchState,
    BenchSummary,
    GpuSample,
    Note,
    PointDone,
    RequestDone,
    RunDone,
    RunFigures,
    ServerInfo,
    ServerState,
    ServerStats,
    TrialResult,
    TrialState,
    _Event,
)


def _ms(value_s: float | None) -> float | None:
    return None if value_s is None else value_s * 1000


def _clock(t_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t_s))



def _ranks(ranks: list[int]) -> str:
    return ",".join(str(r) for r in sorted(ranks)) if ranks else "-"


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def _reasons(errors_by_reason: dict[str, int]) -> str:
    """``refused 3, timeout 1``: failed requests by reason, the commonest first."""
    return ", ".join(f"{k} {n}" for k, n in sorted(errors_by_reason.items(), key=lambda kv: (-kv[1], kv[0])))


def point_load(ev: PointDone) -> str:
    """The load a point ran at, as its column head: ``c=8`` or ``4 req/s``."""
    return f"{ev.request_rate:g} req/s" if ev.request_rate is not None else f"c={ev.concurrency}"


def point_line(ev: PointDone) -> str:
    """One load point: the figures of the throughput-latency curve, and goodput with an SLO.
    Every figure names its kind (aggregate, percentile) and unit (tuiapp/common/labels.py)."""
    trial = f" trial={ev.trial}" if ev.trial else ""
    if ev.request_rate is not None:
        load = (f"rate={ev.request_rate:g} req/s offered={num(ev.offered_request_rate, '.2f')}"
                f" sent={num(ev.sent_request_rate, '.2f')} served={num(ev.served_request_rate, '.2f')} req/s")
    else:
        load = f"concurrency={ev.concurrency}"
    good = (f" goodput={num(ev.goodput_req_s, '.2f')} req/s met={ev.goodput_share:.0%}"
            if ev.goodput_share is not None else "")
    why = f" ({_reasons(ev.errors_by_reason)})" if ev.errors and ev.errors_by_reason else ""
    spec = _spec(ev.spec_accept_histogram, ev.spec_cap_histogram)
    return (
        f"{load}{trial} output={num(ev.output_tok_s, '.1f')} {AGGREGATE}"
        f" requests={num(ev.request_throughput_req_s, '.2f')} {REQ_S}"
        f" ttft p50/p99={num(ev.ttft_p50_ms, '.1f')}/{num(ev.ttft_p99_ms, '.1f')} ms"
        f" tpot p50/p99={num(ev.tpot_p50_ms, '.2f')}/{num(ev.tpot_p99_ms, '.2f')} ms"
        f" e2e p50={num(ev.e2e_p50_ms, '.0f')} ms{good}{spec} runs={ev.runs} reqs={ev.requests} errors={ev.errors}{why}"
    )


def _spec(accepted: list[int] | None, caps: list[int] | None) -> str:
    text = acceptance.positions_text(accepted, caps)
    return f" {text}" if text else ""


def run_line(ev: RunDone) -> str:
    """One run: decode per stream (what one user sees) and output aggregate (what the server
    delivers), TTFT and TPOT as means over the run's requests."""
    trial = f" trial={ev.trial}" if ev.trial else ""
    why = f" ({_short(ev.first_error)})" if ev.errors and ev.first_error else ""
    return (
        f"#{ev.run_index}{trial} decode={num(ev.decode_tok_s, '.1f')} {PER_STREAM}"
        f" output={num(ev.output_tok_s, '.1f')} {AGGREGATE}"
        f" ttft_mean={num(_ms(ev.ttft_s), '.1f')} ms tpot_mean={num(_ms(ev.tpot_s), '.2f')} ms"
        f" accept={num(ev.accept_length, '.2f')}{_spec(ev.spec_accept_histogram, ev.spec_cap_histogram)}"
        f" reqs={ev.requests} errors={ev.errors}{why}"
    )


# The closing summary's table of load points: vLLM's `bench serve` names and units, a column per
# load (its block is one load; a sweep is several side by side).
_POINT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("Successful requests", "served", "d"),
    ("Failed requests", "errors", "d"),
    ("Benchmark duration (s)", "duration_s", ".1f"),
    ("Request throughput (req/s)", "request_throughput_req_s", ".2f"),
    ("Output token throughput (tok/s)", "output_tok_s", ".1f"),
    ("Decode per stream (tok/s)", "decode_tok_s", ".1f"),
    ("Median TTFT (ms)", "ttft_p50_ms", ".1f"),
    ("P90 TTFT (ms)", "ttft_p90_ms", ".1f"),
    ("P99 TTFT (ms)", "ttft_p99_ms", ".1f"),
    ("Median TPOT (ms)", "tpot_p50_ms", ".2f"),
    ("P90 TPOT (ms)", "tpot_p90_ms", ".2f"),
    ("P99 TPOT (ms)", "tpot_p99_ms", ".2f"),
    ("Median ITL (ms)", "itl_p50_ms", ".2f"),
    ("P99 ITL (ms)", "itl_p99_ms", ".2f"),
    ("Median E2EL (ms)", "e2e_p50_ms", ".0f"),
    ("P99 E2EL (ms)", "e2e_p99_ms", ".0f"),
    ("Goodput (req/s)", "goodput_req_s", ".2f"),
)


def points_table(points: list[PointDone]) -> list[str]:
    """The load points as vLLM's `bench serve` result block names its figures, one column per
    load (a trial's name over its loads when there are several trials)."""
    if not points:
        return []
    trials = {p.trial for p in points}
    heads = [(f"{p.trial} " if len(trials) > 1 and p.trial else "") + point_load(p) for p in points]
    label_w = max(len(name) for name, _, _ in _POINT_ROWS)
    cells: list[list[str]] = []
    for name, attr, spec in _POINT_ROWS:
        if attr == "served":
            values = [p.requests - p.errors for p in points]
        else:
            values = [getattr(p, attr) for p in points]
        if attr == "goodput_req_s" and all(v is None for v in values):
            continue  # no SLO given
        cells.append([name, *(num(v, spec) for v in values)])
    col_w = [max(len(h), *(len(row[k + 1]) for row in cells)) for k, h in enumerate(heads)]
    lines = ["  " + "load".ljust(label_w) + "".join(f"  {h:>{w}}" for h, w in zip(heads, col_w, strict=True))]
    lines += ["  " + row[0].ljust(label_w) + "".join(f"  {c:>{w}}" for c, w in zip(row[1:], col_w, strict=True))
              for row in cells]
    failed = [f"{point_load(p)}: {_reasons(p.errors_by_reason)}" for p in points if p.errors and p.errors_by_reason]
    if failed:
        lines.append("  failed requests by reason: " + "; ".join(failed))
    return lines


def _short(text: str, limit: int = 120) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


class NullStream:
    """A stream that drops what it is given: a Printer kept only for its summary."""

    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass


class Printer:
    """Sink: ``await run(sub)`` prints as events come; ``handle(event)`` for synchronous feeding."""

    def __init__(self, stream: TextIO | None = None, *, gpu_every_s: float = 10.0) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.gpu_every_s = gpu_every_s
        self.stream_error: Exception | None = None
        self.first_t_s: float | None = None
        self.last_t_s: float | None = None
        self.runs: list[RunFigures] = []
        self.points: list[PointDone] = []  # a sweep's few points, for the closing table
        self._pending_updates: dict[int, Alert] = {}
        self.alerts: dict[int, Alert] = {}  # by alert_id; id 0 (unset) gets a fresh key
        self.requests = 0
        self.request_errors = 0
        self.errors_by_reason = Counter[str]()  # outcome (common/outcome.py) -> failed requests
        self.requests_cancelled = 0  # cut off by our own stop: neither done nor failed
        self.notes = Counter[str]()
        self.trial_results: list[TrialResult] = []
        self.trial_failures: dict[str, str] = {}  # trial -> why it failed (a failed start's reason)
        self.server_state: str | None = None
        self.server_message = ""  # a failed start's reason, for the summary
        self.server_version: str | None = None
        self.speculation: str | None = None  # the server's algorithm, "off", or None (not known)
        self._latest_gpu: dict[int, GpuSample] = {}
        self._next_gpu_line_t_s: float | None = None
        self._anon_alerts = 0
        self._info_seen: set[tuple[Any, ...]] = set()
        self.startup = startup_phases.Latest()  # the server's own start-up breakdown

    async def run(self, sub: Any) -> None:
        async for event in sub:
            self.handle(event)

    def _print(self, t_s: float, tag: str, text: str) -> None:
        self._flush_updates()
        self._write(t_s, tag, text)

    def _flush_updates(self) -> None:
        # 8 ranks joining one incident within a second make one "update" line, not 7
        pending, self._pending_updates = self._pending_updates, {}
        for ev in pending.values():
            self._print_alert(ev, "update")

    def _write(self, t_s: float, tag: str, text: str) -> None:
        if self.stream_error is not None:
            return
        try:
            self.stream.write(f"{_clock(t_s)} {tag:<8} {mask(text)}\n")
            self.stream.flush()
        except (OSError, ValueError) as exc:
            # stdout gone (the SSH session hung up without a redirect): keep counting for
            # the summary and the recording, stop printing.
            self.stream_error = exc

    def handle(self, ev: _Event) -> None:
        if self.first_t_s is None:
            self.first_t_s = ev.t_s
        self.last_t_s = ev.t_s if self.last_t_s is None else max(self.last_t_s, ev.t_s)
        match ev:
            case GpuSample():
                self._gpu(ev)
            case ServerState():
                self.server_state = ev.state
                self.server_message = ev.message
                extra = [f"url={ev.url}" if ev.url else "", f"pid={ev.pid}" if ev.pid else ""]
                if ev.exit_code is not None:
                    extra.append(f"exit={ev.exit_code}")
                if ev.startup_s is not None:
                    extra.append(f"startup={ev.startup_s:.1f}s")
                if ev.message:
                    extra.append(ev.message)
                self._print(ev.t_s, "server", " ".join([ev.state, *[x for x in extra if x]]))
            case ServerInfo():
                key = (ev.url, ev.version, ev.model_path, ev.speculative_algorithm)
                if key in self._info_seen:
                    return
                self._info_seen.add(key)
                self.server_version = ev.version or self.server_version
                spec = ""
                if ev.engine == "sglang" and not ev.speculative_algorithm and "speculative_algorithm" in ev.server_args:
                    spec = " spec=off"  # the server said so: no acceptance figures will come
                    self.speculation = "off"
                if ev.speculative_algorithm:
                    self.speculation = ev.speculative_algorithm
                    spec = f" spec={ev.speculative_algorithm}" + "".join(
                        f" {label}={value}" for label, value in (
                            ("steps", ev.speculative_num_steps), ("topk", ev.speculative_eagle_topk),
                            ("draft", ev.speculative_num_draft_tokens)) if value is not None)
                if ev.engine != "sglang":
                    self._print(ev.t_s, "info", f"{ev.engine}-compatible server model={ev.model_path or 'n/a'}")
                    return
                self._print(
                    ev.t_s, "info",
                    f"sglang {ev.version or 'n/a'} model={ev.model_path or 'n/a'} tp={ev.tp_size or 'n/a'}{spec}",
                )
            case ServerStats():
                if self.startup.observe(ev):  # the server's own account of the launch, after its ready line
                    self._print(ev.t_s, "server", "startup " + self.startup.text(with_post=False))
            case RunDone():
                self.runs.append(RunFigures(ev))
                self._print(ev.t_s, "run", run_line(ev))
            case PointDone():
                self.points.append(ev)
                self._print(ev.t_s, "point", point_line(ev))
            case RequestDone():
                if ev.cancelled:
                    self.requests_cancelled += 1
                    return
                self.requests += 1
                failed = ev.outcome not in ("ok", "cancelled") if ev.outcome else not ev.ok
                if failed:
                    self.request_errors += 1
                    if ev.outcome:  # recordings before outcomes: counted, with no reason
                        self.errors_by_reason[ev.outcome] += 1
            case BenchSummary():
                trial = f" trial={ev.trial}" if ev.trial else ""
                ci = ev.ci95_decode_tok_s
                ci_text = f" ci95=[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
                self._print(
                    ev.t_s, "bench",
                    f"summary{trial} runs={ev.runs} decode mean={num(ev.mean_decode_tok_s, '.1f')}"
                    f" sd={num(ev.sd_decode_tok_s, '.2f')}{ci_text} {PER_STREAM}",
                )
            case BenchState():
                self._print(ev.t_s, "bench", f"{ev.state} {ev.message}".rstrip())
            case Alert():
                self._alert(ev)
            case TrialState():
                if ev.phase == "failed" and ev.message:
                    self.trial_failures[ev.name] = ev.message
                self._print(ev.t_s, "trial", f"{ev.index + 1}/{ev.total} {ev.name} {ev.phase} {ev.message}".rstrip())
            case TrialResult():
                self.trial_results.append(ev)
                self._print(ev.t_s, "result", f"{ev.name} {ev.status}")
            case Note():
                self.notes[ev.level] += 1
                source = f"[{ev.source}] " if ev.source else ""
                self._print(ev.t_s, "note", f"{ev.level} {source}{ev.text}")

    def _alert(self, ev: Alert) -> None:
        if ev.alert_id:
            previous = self.alerts.get(ev.alert_id)
            self.alerts[ev.alert_id] = ev
            if previous is not None:
                # a growing count is printed at powers of two: a per-request failure stays a
                # few lines however many requests fail
                grown = ev.count != previous.count and ev.count & (ev.count - 1) == 0
                grown |= len(ev.joined) > len(previous.joined)  # a knock-on told (at most MAX_JOINED)
                if grown or ((set(ev.ranks), set(ev.nodes), ev.severity, ev.message, ev.caused_by)
                             != (set(previous.ranks), set(previous.nodes), previous.severity, previous.message,
                                 previous.caused_by)):
                    self._pending_updates[ev.alert_id] = ev  # printed before the next line
                return
            else:
                tag = "new"
        else:
            self._anon_alerts += 1
            self.alerts[-self._anon_alerts] = ev
            tag = "new"
        self._print_alert(ev, tag)

    def _print_alert(self, ev: Alert, tag: str) -> None:
        line = f" line={ev.first_line}" if ev.first_line is not None else ""
        nodes = f" nodes={','.join(ev.nodes)}" if ev.nodes else ""
        cause = f" after=alert#{ev.caused_by}" if ev.caused_by else ""  # a death, and the error it followed
        if ev.count > 1:
            cause += f" count={ev.count}"
        (self._write if tag == "update" else self._print)(
            ev.t_s, "ALERT",
            f"{ev.alert_kind} {ev.severity} {tag}{nodes} ranks={_ranks(ev.ranks)}{line}{cause} source={ev.source}: {ev.message}"
            # the latest knock-on or burst line that joined it
            + (f" | then line {ev.joined[-1][0]}: {ev.joined[-1][1]}" if ev.joined else ""),
        )

    def _gpu(self, ev: GpuSample) -> None:
        self._latest_gpu[ev.index] = ev
        if self._next_gpu_line_t_s is None:
            self._next_gpu_line_t_s = ev.t_s + self.gpu_every_s
            return
        if ev.t_s < self._next_gpu_line_t_s:
            return
        self._next_gpu_line_t_s = ev.t_s + self.gpu_every_s
        self._print(ev.t_s, "gpus", self.gpu_line())

    def gpu_line(self) -> str:
        samples = [self._latest_gpu[i] for i in sorted(self._latest_gpu)]
        parts = [f"n={len(samples)}"]
        mem = [s for s in samples if s.mem_used_bytes is not None]
        if mem:
            top = max(mem, key=lambda s: s.mem_used_bytes or 0)
            total = f"/{top.mem_total_bytes / GIB:.1f}" if top.mem_total_bytes else ""
            parts.append(f"mem max gpu{top.index} {top.mem_used_bytes / GIB:.1f}{total} GiB")  # type: ignore[operator]
        for direction in ("rx", "tx"):
            vals = [(getattr(s, f"pcie_{direction}_bytes_s"), s.index) for s in samples]
            vals = [(v, i) for v, i in vals if v is not None]
            if vals:
                peak, peak_i = max(vals)
                parts.append(
                    f"pcie {direction} sum {sum(v for v, _ in vals) / 1e9:.2f} GB/s max gpu{peak_i} {peak / 1e9:.2f}"
                )
        util = [s.util_pct for s in samples if s.util_pct is not None]
        if util:
            parts.append(f"util mean {sum(util) / len(util):.0f}%")
        return " ".join(parts)

    # ------------------------------------------------------------ summary

    def _spec_summary(self) -> list[str]:
        """Acceptance per draft position over all runs, or why there is none."""
        trials: dict[str | None, list[RunFigures]] = {}
        for r in self.runs:  # trials differ in their draft settings: never pooled
            trials.setdefault(r.trial, []).append(r)
        lines = []
        for name, runs in trials.items():
            accepted, caps = acceptance.pool_pairs((r.spec_accept_histogram, r.spec_cap_histogram) for r in runs)
            if accepted:
                lines.append(f"  speculative acceptance per position{f' trial {name}' if name else ''}"
                             f" ({sum(accepted)} verify steps): " + acceptance.positions_text(accepted, caps))
        if lines:
            return lines
        if self.speculation == "off":
            return ["  speculative decoding: off (the server runs none: no acceptance figures)"]
        if self.speculation and self.runs:
            return [f"  speculative decoding: {self.speculation}, but the server sent no per-request histogram"
                    " (spec_accept_histogram, SGLang #18332): acceptance per position not known"]
        return []

    def summary(self, interrupted: bool = False) -> str:
        self._flush_updates()
        span = (self.last_t_s - self.first_t_s) if self.first_t_s is not None and self.last_t_s is not None else 0.0
        kinds = Counter(a.alert_kind for a in self.alerts.values())
        kinds_text = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
        head = (
            f"summary: {_duration(span)}, {_count(len(self.runs), 'run')}, {_count(self.requests, 'request')}"
            f" ({self.request_errors} failed"
            + (f": {_reasons(self.errors_by_reason)}" if self.errors_by_reason else "")
            + (f", {self.requests_cancelled} cancelled" if self.requests_cancelled else "")
            + f"), {_count(len(self.alerts), 'alert')}"
            + (f" ({kinds_text})" if kinds_text else "")
            + (", interrupted" if interrupted else "")
        )
        lines = [head]
        loads = {(p.trial, point_load(p)) for p in self.points}
        if len(loads) <= len({p.trial for p in self.points}):  # one load per trial: its runs are one sample
            rates = [r.decode_tok_s for r in self.runs if r.decode_tok_s is not None]
            lines.append(f"  decode {PER_STREAM} over runs (all runs): " + _stats_text(rates))
            trials: dict[str, list[RunFigures]] = {}
            for r in self.runs:
                if r.trial:
                    trials.setdefault(r.trial, []).append(r)
            for name, runs in trials.items():
                vals = [r.decode_tok_s for r in runs if r.decode_tok_s is not None]
                accept = [r.accept_length for r in runs if r.accept_length is not None]
                lines.append(
                    f"  trial {name}: {_stats_text(vals)}" + (f" accept={mean(accept):.2f}" if accept else "")
                )
            outs = [r.output_tok_s for r in self.runs if r.output_tok_s is not None]
            if outs:
                lines.append(f"  output {AGGREGATE} over runs: mean {mean(outs):.1f}")
        lines += points_table(self.points)  # a sweep's loads side by side, never pooled
        lines += self._spec_summary()
        for res in self.trial_results:
            why = self.trial_failures.get(res.name) if res.status != "ok" else None
            lines.append(f"  result {res.name}: {res.status}" + (f" ({_short(why)})" if why else ""))
        if self.server_state is not None:
            lines.append(f"  server: last state {self.server_state}" + (f", sglang {self.server_version}" if self.server_version else "")
                         + (f": {_short(self.server_message)}" if self.server_state == "failed" and self.server_message else ""))
        if self.startup:
            lines.append("  server startup: " + self.startup.text())
        if self.notes:
            lines.append("  notes: " + ", ".join(f"{k} x{n}" for k, n in sorted(self.notes.items())))
        return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _stats_text(vals: list[float]) -> str:
    if not vals:
        return "n/a (no runs)"
    m, s, ci = mean(vals), sd(vals), ci95(vals)
    text = f"mean {m:.2f}"
    text += f" sd {s:.2f}" if s is not None else " sd n/a"
    text += f" ci95 [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else " ci95 n/a"
    return text + f" (n={len(vals)})"
