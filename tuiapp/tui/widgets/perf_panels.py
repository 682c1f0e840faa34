"""Throughput, acceptance and latency: figures on top, block-chart history below.

The three share one store version ("perf") and differ only in what they read; the chart
takes whatever rows the layout gives the panel.
"""

from __future__ import annotations

from rich.text import Text

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.curve_text import curve_grid
from tuiapp.tui.widgets.panel import Panel


class _PerfPanel(Panel):
    min_interval_s = 0.75  # the server's tok/s comes from three sources, ~3 a second

    def _line(self, *parts: tuple[str, str]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for content, tone in parts:
            text.append(content, self.tone(tone))
        return text

    axis_w: int = 4  # the widest series name in the panel, so stacked charts line up

    def _chart(self, name: str, values, rows: int, tone: str = "spark", **scale) -> list[Text]:
        """One series per chart, with its name and scale on a y axis in the series' colour."""
        out = []
        for axis, bars in fmt.axis_chart(values, self.size.width, rows, name, label_w=self.axis_w, **scale):
            out.append(self._line((axis, tone), (bars, tone)))
        return out

    def _join(self, lines: list[Text]) -> Text:
        return Text("\n", no_wrap=True).join(lines[: max(1, self.size.height)])


class ThroughputPanel(_PerfPanel):
    """Decode tok/s: the latest request, the runs (mean, sd, ci95) and the server's own figure."""

    panel_key = "throughput"
    axis_w = 6

    def render(self) -> Text:
        s = self.store
        req = s.last_request
        run = s.last_run
        mean, sd, ci95, n = s.run_stats()
        # The names in the series' colours are the charts' legend.
        best = s.best_result() if s.finished else None
        if best is not None:  # the campaign is over: its result, not the last trial's n/a
            row = best.row
            lines = [
                self._line(("best ", "label"), (best.name, "value"), ("  ", "label"),
                           (num(row.get("mean_decode_tok_s"), '.1f'), "value"), (" ± ", "label"),
                           (num(row.get("sd_decode_tok_s"), '.2f'), "value"),
                           (f"  n={len(row.get('runs_decode_tok_s') or [])}", "muted")),
                self._line(("last run ", "spark"), (num(s.run_tok_s[-1] if s.run_tok_s else None, '.1f'), "value"),
                           (f"  of {s.last_run_trial}" if s.last_run_trial else "", "muted")),
            ]
        else:
            lines = []
        lines = lines or [
            self._line(("run ", "spark"), (num(run.decode_tok_s if run else None, '.1f'), "value"),
                       ("  req ", "label"), (num(req.decode_tok_s if req else None, '.1f'), "value"),
                       ("  server ", "rx"), (num(s.server_tok_s[-1] if s.server_tok_s else None, '.1f'), "value")),
            self._line(("mean ", "label"), (num(mean, '.1f'), "value"), (" ± ", "label"),
                       (num(sd, '.2f'), "value"), (f"  n={n}", "muted"), ("  ci95 ", "label"),
                       (f"{ci95[0]:.1f}–{ci95[1]:.1f}" if ci95 else fmt.NA, "value")),
        ]
        if req is not None and not req.ok:  # why, not just that: the latest failure's reason
            lines.append(self._line(("failed: ", "error"), (req.error or "unknown", "error")))
        rows = max(1, self.size.height - len(lines))
        if rows >= 4 and len(s.server_tok_s) > 0:
            run_rows = max(1, rows // 2)
            lines += self._chart("run", s.run_tok_s, run_rows)
            lines += self._chart("server", s.server_tok_s, rows - run_rows, "rx")
        else:
            lines += self._chart("run", s.run_tok_s, rows)
        return self._join(lines)


class AcceptancePanel(_PerfPanel):
    """Speculative decoding: accepted tokens per verify step and the accept rate."""

    panel_key = "acceptance"

    def render(self) -> Text:
        s = self.store
        length = s.accept_length[-1] if s.accept_length else None
        rate = s.accept_rate[-1] if s.accept_rate else None
        no_spec = s.server_info is not None and not s.server_info.speculative_algorithm
        if no_spec and length is None:
            return self._join([self._line(("speculation off", "muted"))])
        lines = [self._line(("len ", "spark"), (num(length, '.2f'), "value"),
                            (" · ", "label"), (num(rate * 100 if rate is not None else None, '.0f', "%"), "value"))]
        lines += self._chart("len", s.accept_length, max(1, self.size.height - 1))
        return self._join(lines)


class LatencyPanel(_PerfPanel):
    """Client-side time to first token and inter-token latency of the latest request."""

    panel_key = "latency"
    axis_w = 5  # "120ms"

    def render(self) -> Text:
        s = self.store
        if s.points or s.current_load:
            return self._curve()
        req = s.last_request
        lines = [
            self._line(("TTFT ", "spark"), (fmt.ms(req.ttft_s if req else None), "value")),
            self._line(("TPOT ", "rx"), (fmt.ms(req.tpot_s if req else None), "value")),
        ]
        rows = max(1, self.size.height - len(lines))
        ms = {"scale": 1000.0, "unit": "ms"}
        if rows >= 4:
            lines += self._chart("ttft", s.ttft_s, rows // 2, **ms)
            lines += self._chart("tpot", s.tpot_s, rows - rows // 2, "rx", **ms)
        else:
            lines += self._chart("tpot", s.tpot_s, rows, "rx", **ms)
        if req is not None and not req.ok:
            lines.insert(0, self._line(("last request failed", "error")))
        return self._join(lines)

    _TRIAL_TONES = ("spark", "rx", "tx", "warn", "ok", "value")

    def _curve(self) -> Text:
        """A sweep or open loop: the load now, goodput, and TTFT against throughput per trial."""
        s = self.store
        last = s.points[-1] if s.points else None
        # narrow panels first: the load and the share that met the SLO lead the line
        head = [("at ", "label"), (s.current_load or fmt.NA, "value")]
        if last is not None and last.goodput_share is not None:
            tone = "ok" if last.goodput_share >= 0.99 else "warn" if last.goodput_share >= 0.9 else "error"
            head += [("  SLO met ", "label"), (f"{last.goodput_share:.0%}", tone),
                     ("  goodput ", "label"), (num(last.goodput_req_s, ".2f"), "value"), (" req/s", "muted")]
        lines = [self._line(*head)]
        if last is not None:
            lines.append(self._line(("TTFT ", "spark"),
                                    (f"{num(last.ttft_p50_ms, '.0f')}/{num(last.ttft_p99_ms, '.0f')}ms", "value"),
                                    (" out ", "label"), (num(last.output_tok_s, ".0f"), "value"),
                                    (" tok/s", "muted"), (f"  (point {len(s.points)})", "muted")))
        rows = self.size.height - len(lines) - 1
        if rows < 2 or not s.points:
            return self._join(lines)
        curves: dict[str, list] = {}
        for p in s.points:
            curves.setdefault(p.trial or "run", []).append(p)
        axis_w = 6
        grid, y_hi, x_hi, letters = curve_grid(curves, self.size.width - axis_w, rows)
        tones = {letter: self._TRIAL_TONES[k % len(self._TRIAL_TONES)] for k, letter in enumerate(letters.values())}
        for k, row in enumerate(grid):
            label = f"{y_hi:.0f}ms" if k == 0 else ("0" if k == len(grid) - 1 else "")
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append(f"{label:>{axis_w - 1}} ", self.tone("label"))
            for ch in row:
                text.append(ch, self.tone(tones.get(ch.lower(), "muted")))
            lines.append(text)
        legend = [(f"{letter.upper()}/{letter} {name} ", tones[letter]) for name, letter in letters.items()]
        lines.append(self._line(*legend, (f"p50/p99 · x: 0-{x_hi:.0f} tok/s", "muted")))
        return self._join(lines)
