"""Throughput, acceptance and latency: figures on top, block-chart history below.

The three share one store version ("perf") and differ only in what they read; the chart
takes whatever rows the layout gives the panel.
"""

from __future__ import annotations

from rich.text import Text

from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel


class _PerfPanel(Panel):

    def _line(self, *parts: tuple[str, str]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for content, tone in parts:
            text.append(content, self.tone(tone))
        return text

    def _chart(self, label: str, values, rows: int, tone: str = "spark", **scale) -> list[Text]:
        width = max(0, self.size.width - len(label))
        scale.setdefault("floor", fmt.zoom_floor(list(values)[-width:]) if width else None)
        out = []
        for i, row in enumerate(fmt.spark_rows(values, width, rows, **scale)):
            out.append(self._line((label if i == rows - 1 else " " * len(label), "label"), (row, tone)))
        return out

    def _join(self, lines: list[Text]) -> Text:
        return Text("\n", no_wrap=True).join(lines[: max(1, self.size.height)])


class ThroughputPanel(_PerfPanel):
    """Decode tok/s: the latest request, the runs (mean, sd, ci95) and the server's own figure."""

    panel_key = "throughput"

    def render(self) -> Text:
        s = self.store
        req = s.last_request
        run = s.last_run
        mean, sd, ci95, n = s.run_stats()
        lines = [
            self._line(("now ", "label"), (fmt.num(req.decode_tok_s if req else None), "value"),
                       (" tok/s  run ", "label"), (fmt.num(run.decode_tok_s if run else None), "value"),
                       ("  server ", "label"), (fmt.num(s.server_tok_s[-1] if s.server_tok_s else None), "value")),
            self._line(("mean ", "label"), (fmt.num(mean), "value"), ("  sd ", "label"),
                       (fmt.num(sd, 2), "value"), ("  ci95 ", "label"),
                       (f"{ci95[0]:.1f}–{ci95[1]:.1f}" if ci95 else fmt.NA, "value"),
                       (f"  n={n}", "muted")),
        ]
        if req is not None and not req.ok:  # why, not just that: the latest failure's reason
            lines.append(self._line(("failed: ", "error"), (req.error or "unknown", "error")))
        rows = max(1, self.size.height - len(lines))
        if rows >= 2 and len(s.server_tok_s) > 0:
            run_rows = max(1, rows // 2)
            lines += self._chart("runs ", s.run_tok_s, run_rows)
            lines += self._chart("srv  ", s.server_tok_s, rows - run_rows, "rx")
        else:
            lines += self._chart("runs ", s.run_tok_s, rows)
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
        lines = [self._line(("len ", "label"), (fmt.num(length, 2), "value"),
                            ("  rate ", "label"), (fmt.num(rate * 100 if rate is not None else None, 0, "%"), "value"))]
        lines += self._chart("", s.accept_length, max(1, self.size.height - 1))
        return self._join(lines)


class LatencyPanel(_PerfPanel):
    """Client-side time to first token and inter-token latency of the latest request."""

    panel_key = "latency"

    def render(self) -> Text:
        s = self.store
        req = s.last_request
        lines = [
            self._line(("TTFT ", "label"), (fmt.ms(req.ttft_s if req else None), "value")),
            self._line(("ITL  ", "label"), (fmt.ms(req.itl_s if req else None), "value")),
        ]
        rows = max(1, self.size.height - len(lines))
        if rows >= 2:
            lines += self._chart("ttft ", s.ttft_s, rows // 2)
            lines += self._chart("itl  ", s.itl_s, rows - rows // 2, "rx")
        else:
            lines += self._chart("itl  ", s.itl_s, 1)
        if req is not None and not req.ok:
            lines.insert(0, self._line(("last request failed", "error")))
        return self._join(lines)
