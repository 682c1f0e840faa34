"""Load curves (a sweep, an open-loop rate list, a --find-max-load search): aggregate output
tok/s and TTFT p50/p99 against the offered load, one line per trial, side by side when the
panel is wide enough, above and below when not. The load running now heads the panel."""

from __future__ import annotations

from rich.text import Text

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.curve_text import LoadAxis, load_grid, load_of
from tuiapp.tui.widgets.panel import Panel

_TRIAL_TONES = ("spark", "rx", "tx", "warn", "ok", "value")
_AXIS_W = 6
SIDE_BY_SIDE_W = 70  # below this the two plots stack


class CurvePanel(Panel):
    panel_key = "curve"

    def _line(self, *parts: tuple[str, str]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for content, tone in parts:
            text.append(content, self.tone(tone))
        return text

    def render(self) -> Text:
        s = self.store
        width, height = self.size
        last = s.points[-1] if s.points else None
        head = [("at ", "label"), (s.current_load or fmt.NA, "value")]
        if last is not None and last.goodput_share is not None:
            tone = "ok" if last.goodput_share >= 0.99 else "warn" if last.goodput_share >= 0.9 else "error"
            head += [("  SLO met ", "label"), (f"{last.goodput_share:.0%}", tone),
                     ("  goodput ", "label"), (num(last.goodput_req_s, ".2f"), "value"), (" req/s", "muted")]
        head.append((f"  {len(s.points)} point{'s' if len(s.points) != 1 else ''} done", "muted"))
        lines = [self._line(*head)]
        curves: dict[str, list] = {}
        for p in s.points:
            if load_of(p) is not None:
                curves.setdefault(p.trial or "run", []).append(p)
        if not curves:
            lines.append(self._line(("the curve appears when the first load point is done", "muted")))
            return Text("\n", no_wrap=True).join(lines[: max(1, height)])
        tones = {}
        letters = {name: chr(ord("a") + k % 26) for k, name in enumerate(curves)}
        for k, letter in enumerate(letters.values()):
            tones[letter] = _TRIAL_TONES[k % len(_TRIAL_TONES)]
        loads = [load_of(p) for ps in curves.values() for p in ps]
        by_rate = any(p.request_rate is not None for ps in curves.values() for p in ps)
        unit = "req/s offered" if by_rate else "concurrency"
        plots = [("output tok/s aggregate", [lambda p: p.output_tok_s], ""),
                 ("TTFT ms p50=A p99=a", [lambda p: p.ttft_p50_ms, lambda p: p.ttft_p99_ms], "ms")]
        legend = self._line(*[(f"{letter.upper()} {name}  ", tones[letter]) for name, letter in letters.items()])
        body_h = max(0, height - len(lines) - 1)  # the legend closes the panel
        if width >= SIDE_BY_SIDE_W:
            plot_w = (width - 2) // 2
            blocks = [self._plot(title, figs, u, curves, loads, plot_w, body_h, unit, tones) for title, figs, u in plots]
            for left, right in zip(*blocks, strict=True):
                row = left.copy()
                row.append("  ")
                row.append_text(right)
                lines.append(row)
        else:
            top_h = body_h // 2
            lines += self._plot(*plots[0], curves, loads, width, top_h, unit, tones)
            lines += self._plot(*plots[1], curves, loads, width, body_h - top_h, unit, tones)
        lines.append(legend)
        return Text("\n", no_wrap=True).join(lines[: max(1, height)])

    def _plot(self, title: str, figures, unit: str, curves, loads, width: int, height: int,
              load_unit: str, tones: dict[str, str]) -> list[Text]:
        """A titled plot of ``height`` rows: title, grid with its y axis, the loads under it."""
        if height < 4:
            return [self._pad(self._line((title, "label")), width)][:height]
        axis = LoadAxis(loads, width - _AXIS_W)
        grid, y_hi, _letters = load_grid(curves, axis, height - 2, figures)
        out = [self._line((fmt.fit(title, width), "label"))]
        for k, row in enumerate(grid):
            label = fmt.short(y_hi) + unit if k == 0 else ("0" if k == len(grid) - 1 else "")
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append(f"{label:>{_AXIS_W - 1}}", self.tone("label"))
            text.append("┤" if k in (0, len(grid) - 1) else "│", self.tone("label"))
            for ch in row:
                text.append(ch, self.tone(tones.get(ch.lower(), "muted")))
            out.append(text)
        scale = " log" if axis.log else ""
        ticks = axis.ticks(loads)
        out.append(self._line((f"{'x:':>{_AXIS_W}}", "label"), (ticks, "value")))
        out[0] = self._line((fmt.fit(f"{title} · x: {load_unit}{',' if scale else ''}{scale}", width), "label"))
        return [self._pad(t, width) for t in out]

    @staticmethod
    def _pad(text: Text, width: int) -> Text:
        text.truncate(width, overflow="ellipsis", pad=True)
        return text
