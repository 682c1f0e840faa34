"""Throughput, acceptance and latency: labelled figures on top, block-chart history below.

Every figure says what it is (per stream or aggregate, which percentile) and its unit; charts
start at zero, so a 0.01 sd never fills the panel. The chart takes whatever rows are left.
"""

from __future__ import annotations

import textwrap

from rich.text import Text

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.figures import rate_per_s, reasons_text
from tuiapp.tui.widgets.panel import Panel
from tuiapp.tui.widgets.text_builder import TextBuilder, join_lines


class _PerfPanel(Panel):
    min_interval_s = 0.75  # the server's tok/s comes from three sources, ~3 a second

    def _line(self, *parts: tuple[str, str]) -> Text:
        line = TextBuilder()
        for content, tone in parts:
            line.add(content, self.tone(tone))
        return line.text(overflow="ellipsis")

    axis_w: int = 4  # the widest series name in the panel, so stacked charts line up

    def _chart(self, name: str, values, rows: int, width: int, tone: str = "spark", **scale) -> list[Text]:
        """One series per chart, with its name and scale on a y axis in the series' colour;
        zero-based unless told otherwise (a zoomed axis turns noise into a cliff)."""
        scale.setdefault("floor", 0.0)
        # A series that counts its changes (GaugeSeries) redraws its chart only when it moved:
        # the figures above change every second, the chart every 10 s.
        version = getattr(values, "version", None)
        key = (rows, width, self.tone(tone), tuple(sorted(scale.items())))
        charts = self.__dict__.setdefault("_charts", {})
        cached = charts.get(name)  # (key, version, cells, lines)
        if cached is not None and cached[0] == key and version is not None and cached[1] == version:
            return cached[3]
        cells = fmt.axis_chart(values, width, rows, name, label_w=self.axis_w, **scale)
        if cached is not None and cached[0] == key and cached[2] == cells:
            # the series moved (a reading changed its column's mean) but not a cell of its chart:
            # the same lines, so the panel's strips and the screen's cells are reused as they are
            charts[name] = (key, version, cells, cached[3])
            return cached[3]
        out = [self._line((axis, tone), (bars, tone)) for axis, bars in cells]
        charts[name] = (key, version, cells, out)
        return out

    @staticmethod
    def _join(lines: list[Text], height: int) -> Text:
        return join_lines(lines[: max(1, height)])


class ThroughputPanel(_PerfPanel):
    """Decode tok/s per stream (the runs and the latest request), the aggregate rates (the
    client's output and the server's own gen throughput), mean ± sd and CI of the runs."""

    panel_key = "throughput"
    axis_w = 6

    def render(self) -> Text:
        s = self.store
        width, height = self.size
        # The names in the series' colours are the charts' legend.
        best = s.best_result() if s.finished else None
        failure = s.failure() if best is None else None  # a finished campaign shows its best, not its last failure
        if failure is not None:  # a failed start: its reason where the eye is, not in a details window
            return self._failed(failure, width, height)
        req = s.last_request
        run = s.last_run
        mean, sd, ci95, n = s.run_stats()
        if best is not None:  # the campaign is over: its result, not the last trial's n/a
            row = best.row
            lines = [
                self._line(("best ", "label"), (best.name, "value"), ("  ", "label"),
                           (num(row.get("mean_decode_tok_s"), '.1f'), "value"), (" ± ", "label"),
                           (num(row.get("sd_decode_tok_s"), '.2f'), "value"), (" tok/s/stream", "muted"),
                           (f"  n={len(row.get('runs_decode_tok_s') or [])}", "muted")),
                self._line(("last run ", "spark"), (num(s.last_run_tok_s, '.1f'), "value"),
                           (" tok/s/stream", "muted"),
                           (f"  of {s.last_run_trial}" if s.last_run_trial else "", "muted")),
            ]
        else:
            lines = []
        server = s.server_tok_s_now
        # the kind of each figure in words; on a narrow panel the short words (docs/dashboard.md)
        stream, total = ("per stream ", "aggregate  ") if width >= 36 else ("stream ", "total  ")
        lines = lines or [
            self._line((stream, "label"), ("run ", "spark"), (num(run.decode_tok_s if run else None, '.1f'), "value"),
                       ("  req ", "label"), (num(req.decode_tok_s if req and req.ok else None, '.1f'), "value"),
                       (" tok/s", "muted")),
            self._line((total, "label"), ("out ", "label"), (num(run.output_tok_s if run else None, '.0f'), "value"),
                       ("  server ", "rx"), (num(server, '.0f'), "value"), (" tok/s", "muted")),
            self._line(("mean ", "label"), (num(mean, '.1f'), "value"), (" ± ", "label"),
                       (num(sd, '.2f'), "value"), (f" n={n}", "muted"), (" ci95 ", "label"),
                       (f"{ci95[0]:.1f}–{ci95[1]:.1f}" if ci95 else fmt.NA, "value")),
        ]
        if req is not None and not req.ok:  # why, not just that: the latest failure's reason
            lines.append(self._line(("failed: ", "error"), (req.error or "unknown", "error")))
        rows = max(1, height - len(lines))
        if rows >= 4 and len(s.server_tok_s) > 0:
            run_rows = max(1, rows // 2)
            lines += self._chart("run", s.run_tok_s, run_rows, width)
            lines += self._chart("server", s.server_tok_s, rows - run_rows, width, "rx")
        else:
            lines += self._chart("run", s.run_tok_s, rows, width)
        return self._join(lines, height)

    def _failed(self, reason: str, width: int, height: int) -> Text:
        lines = [self._line(("FAILED", "error"), ("  the server did not start or died", "label"))]
        for piece in textwrap.wrap(" ".join(reason.split()), max(10, width - 1))[: max(1, height - 2)]:
            lines.append(self._line((piece, "error")))
        lines.append(self._line(("l: the whole log", "muted")))
        return self._join(lines, height)


class AcceptancePanel(_PerfPanel):
    """Speculative decoding: accepted tokens per verify step and the accept rate."""

    panel_key = "acceptance"

    def on_resize(self) -> None:
        # the whole word where it fits: a title cut with an ellipsis names nothing
        self.border_title = "acceptance" if self.size.width >= 14 else "accept"

    def render(self) -> Text:
        s = self.store
        length = s.accept_length[-1] if s.accept_length else None
        rate = s.accept_rate[-1] if s.accept_rate else None
        no_spec = s.server_info is not None and not s.server_info.speculative_algorithm
        width, height = self.size
        if no_spec and length is None:
            return self._join([self._line(("speculation off", "muted"))], height)
        narrow = width < 24
        lines = [self._line(("len ", "spark"), (num(length, '.2f'), "value"), ("" if narrow else " tok/step", "muted"),
                            (" · " if narrow else "  rate ", "label"),
                            (num(rate * 100 if rate is not None else None, '.0f', "%"), "value"))]
        # one accepted token per step is no speculation at all: the axis starts there
        lines += self._chart("len", s.accept_length, max(1, height - 1), width, floor=1.0)
        return self._join(lines, height)


class LatencyPanel(_PerfPanel):
    """Client-side latency percentiles (ms) of this trial's and load point's latest requests:
    TTFT, TPOT and end to end, then TTFT and TPOT per request as charts."""

    panel_key = "latency"
    axis_w = 5  # "120ms"

    def render(self) -> Text:
        s = self.store
        window = s.latency
        pct = window.percentiles_ms()
        count = f"  n={len(window)}"
        if not len(window) and s.points:  # between loads: the point that just finished, so labelled
            p = s.points[-1]
            pct = {"TTFT": [p.ttft_p50_ms, p.ttft_p90_ms, p.ttft_p99_ms],
                   "TPOT": [p.tpot_p50_ms, p.tpot_p90_ms, p.tpot_p99_ms],
                   "E2E": [p.e2e_p50_ms, p.e2e_p90_ms, p.e2e_p99_ms]}
            count = f"  point {len(s.points)} done"
        width, height = self.size
        w = 6 if width >= 17 else 5  # a column: "  55.4" or " 55.4"
        cols = (0, 1, 2) if width >= 5 + 3 * w else (0, 2)  # p90 joins when it fits
        if width < 15:
            w = 5
        names = ("p50", "p90", "p99")
        label_w = 5 if width >= 15 else 4
        fits = label_w + w * len(cols) + len(count) <= width  # an overflow would cut p99, not n
        head = self._line((f"{'ms':<{label_w}}", "label"), *((f"{names[c]:>{w}}", "label") for c in cols),
                          (count if fits else "", "muted"))
        lines = [head]
        for name, tone in (("TTFT", "spark"), ("TPOT", "rx"), ("E2E", "label")):
            cells = [num(v, ".0f" if v is None or v >= 100 else ".1f") for v in (pct[name][c] for c in cols)]
            lines.append(self._line((f"{name:<{label_w}}", tone), *((f"{cell:>{w}}", "value") for cell in cells)))
        if not len(window) and not s.points:
            lines[1:] = [self._line(("no request back yet", "muted"))]
        rows = max(1, height - len(lines))
        ms = {"scale": 1000.0, "unit": "ms"}
        if rows >= 4:
            lines += self._chart("ttft", s.ttft_s, rows // 2, width, **ms)
            lines += self._chart("tpot", s.tpot_s, rows - rows // 2, width, "rx", **ms)
        elif rows >= 2:
            lines += self._chart("tpot", s.tpot_s, rows, width, "rx", **ms)
        return self._join(lines, height)


STALE_S = 5.0  # server figures older than this say so


class ServerPanel(_PerfPanel):
    """What a tuner looks at first: the server's running and queued requests and KV-cache
    usage (from /metrics, or the log's decode lines), the client's request rate and its
    failed requests by reason."""

    panel_key = "server"
    axis_w = 4

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines(*self.size))  # auto height in the right column: every line it has (no chart)

    def render(self) -> Text:
        width, height = self.size
        return self._join(self._lines(width, height), height)

    def _lines(self, width: int, height: int) -> list[Text]:
        s = self.store
        load = s.server_load
        narrow = width < 30  # the perf row at 80-100 columns: short words
        lines = []
        if load is not None:
            queued_tone = "warn" if load.queue_reqs else "value"
            lines.append(self._line(("run " if narrow else "running ", "label"), (num(load.running_reqs, 'd'), "value"),
                                    (" · queue " if narrow else "  queued ", "label"),
                                    (num(load.queue_reqs, 'd'), queued_tone), ("" if narrow else " req", "muted")))
            usage = load.token_usage
            bar_w = max(0, min(20, width - (8 if narrow else 14)))
            filled, empty = fmt.bar(usage, bar_w)
            tone = "error" if (usage or 0) >= 0.97 else "warn" if (usage or 0) >= 0.9 else "spark"
            lines.append(self._line(("KV " if narrow else "KV cache ", "label"), (filled, tone), (empty, "free"),
                                    (f" {num(usage * 100 if usage is not None else None, '.0f', '%')}", "value")))
        else:
            why = s.metrics_absent or "running, queued, KV: waiting for /metrics or the log"
            lines.append(self._line((why, "muted" if s.metrics_absent is None else "warn")))
        rate = rate_per_s(s.request_times_s, s.now_t_s)
        failed = sum(s.errors_by_reason.values())
        lines.append(self._line(("" if narrow else "requests ", "label"), (num(rate, '.2f'), "value"),
                                (" req/s" if narrow else " req/s done", "muted")))
        lines.append(self._line(("failed ", "label"), (str(failed), "error" if failed else "value")))
        if failed:  # one reason a line where there are rows for them, else in one line
            reasons = s.errors_by_reason.most_common()
            room = max(0, height - len(lines) - 1) if height else len(reasons)
            if len(reasons) <= room:
                lines += [self._line((f"  {name} ", "label"), (str(n), "error")) for name, n in reasons]
            else:
                lines[-1].append(": " + reasons_text(s.errors_by_reason), self.tone("error"))
        if load is not None:  # where from, and its age once it is old (a clock here would move every second)
            source = "/metrics" if load.source == "metrics" else "log"
            age_s = (s.now_t_s or load.t_s) - load.t_s
            old = f", {fmt.clock(age_s)} old" if age_s > STALE_S else ""
            lines.append(self._line((f"from {source}{old}", "warn" if old else "muted")))
        # the rows left: running requests and KV usage over time, from zero (KV: 0-100%)
        rows = height - len(lines)
        if rows >= 4 and load is not None:
            lines += self._chart("run", s.running_reqs, rows // 2, width)
            lines += self._chart("kv", s.kv_usage, rows - rows // 2, width, "rx", scale=100.0, unit="%", ceiling=1.0)
        return lines
