"""Replay position: play state, speed, position / duration and a progress rule."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from tuiapp.controls import ReplayControls
from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import tone_style


class TimelineBar(Widget):
    COMPONENT_CLASSES = {"timeline--done", "timeline--todo", "timeline--label"}

    def __init__(self, replay: ReplayControls, **kwargs) -> None:
        super().__init__(**kwargs)
        self.replay = replay
        self._shown: tuple = ()

    def paint(self, force: bool = False) -> None:
        r = self.replay
        now = (r.playing, r.speed, int(r.position_s), int(r.duration_s))
        if force or now != self._shown:
            self._shown = now
            self.refresh()

    def render(self) -> Text:
        r = self.replay
        label = tone_style(self, "timeline--label")
        text = Text(no_wrap=True)
        text.append(" ▶ play " if r.playing else " ‖ pause", label)
        text.append(f" x{r.speed:g} ".ljust(5), label)
        text.append(f" {fmt.clock(r.position_s)} / {fmt.clock(r.duration_s)} ", label)
        width = max(0, self.size.width - len(text) - 1)
        frac = r.position_s / r.duration_s if r.duration_s > 0 else 0.0
        done = round(min(max(frac, 0.0), 1.0) * width)
        text.append("━" * done, tone_style(self, "timeline--done"))
        text.append("─" * (width - done), tone_style(self, "timeline--todo"))
        return text
