"""Base for the dashboard panels: render from the store, repaint only when its version moved."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.style import Style
from textual.widget import Widget

from tuiapp.tui.store import DashboardStore


class Panel(Widget):
    """A panel renders one Rich Text from the store; colours come from component classes,
    so the .tcss files (and so the theme) decide them, never a hex value in Python."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "panel--label", "panel--muted", "panel--value", "panel--ok", "panel--warn",
        "panel--error", "panel--spark", "panel--rx", "panel--tx", "panel--free", "panel--badge",
    }
    panel_key: ClassVar[str] = ""
    #: at most one repaint per this many seconds (0: every paint tick); a figure that is
    #: sampled every second or faster is still never shown more than ~1 s old
    min_interval_s: ClassVar[float] = 0.0
    #: render and compare before refreshing (False where the text nearly always moves)
    compare_text: ClassVar[bool] = True

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.painted_version = -1
        self._painted_text: object = None
        self._painted_s = 0.0

    def paint(self, force: bool = False) -> None:
        """Refresh if the store changed what this panel shows (called by the paint timer).

        A version that moved does not always move the text (the same figure again, a
        series that only grew off-screen): the text is rendered and compared first, since
        a refresh costs Textual ~10x what building the Rich Text does."""
        version = self.store.versions[self.panel_key]
        if not force and version == self.painted_version:
            return
        now_s = time.monotonic()
        if not force and now_s - self._painted_s < self.min_interval_s:
            return  # painted a moment ago: the next tick after the interval shows it
        self._painted_s = now_s
        self.painted_version = version
        if not force and self.compare_text and self.size.area:
            text = self.render()
            if text == self._painted_text:
                return
            self._painted_text = text
        else:
            self._painted_text = None
        self.refresh(layout=force)

    def tone(self, name: str) -> Style:
        return self.get_component_rich_style(f"panel--{name}", partial=True)
