"""One line under the header for long work: the plan's trial, the sweep's load point or the
search's probe, a bar, the time so far and an ETA from the pace so far."""

from __future__ import annotations

from rich.text import Text

from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel


class ProgressLine(Panel):
    panel_key = "progress"

    def render(self) -> Text:
        progress = self.store.progress()
        text = Text(no_wrap=True, overflow="ellipsis")
        if progress is None:
            return text
        if progress.done_fraction is not None:
            filled, empty = fmt.bar(progress.done_fraction, 10)
            text.append(filled, self.tone("spark"))
            text.append(empty, self.tone("free"))
            text.append(f" {progress.done_fraction:.0%}", self.tone("value"))
        # the ETA first: a narrow screen cuts the end of the line
        text.append("  ETA ", self.tone("label"))
        if progress.eta_s is not None:
            text.append(fmt.clock(progress.eta_s), self.tone("value"))
        else:
            text.append("open" if progress.done_fraction is None else "n/a (no pace yet)", self.tone("muted"))
        text.append("  elapsed ", self.tone("label"))
        text.append(fmt.clock(progress.elapsed_s), self.tone("value"))
        text.append("  ", self.tone("label"))
        text.append(progress.label, self.tone("value"))
        return text
