"""A panel of rows with a cursor (the alert list, the trials ledger).

Up/down/home/end/page keys, the mouse wheel or a click move the cursor; Enter, or a click on
the cursor's row, selects it (each panel posts its own message). Not an OptionList or a
DataTable: those re-render every row per change and lay the screen out when their line count
or columns move; here a frame refreshes the lines whose text changed, and the screen is laid
out only while the panel's height still follows its line count.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType

from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.panel import Panel


class CursorPanel(Panel, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor(-1000000)", "First", show=False),
        Binding("end", "cursor(1000000)", "Last", show=False),
        Binding("enter", "select", "Select", show=False),
    ]

    def __init__(self, store: DashboardStore, *, title: str, **kwargs) -> None:
        super().__init__(store, **kwargs)
        self.highlighted = 0  # row of the cursor
        self._top = 0  # first row shown
        self._lines = 0  # lines the panel last asked the layout for
        self.base_title = title

    # what a panel says about its rows
    def _row_total(self) -> int:
        raise NotImplementedError

    def _head_lines(self) -> int:
        """Lines above the rows (a header)."""
        return 0

    def _select(self, row: int) -> None:
        """Post the panel's message for ``row`` (it exists)."""
        raise NotImplementedError

    def _follow(self) -> None:
        """Move the cursor with the data before a paint (the newest alert, the running trial)."""

    def _height_follows_lines(self) -> bool:
        return True

    def _body_height(self) -> int:
        return max(1, self.size.height - self._head_lines())

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, self._row_total() + self._head_lines())  # the CSS caps it; beyond, it scrolls

    def paint(self, force: bool = False) -> None:
        self._follow()
        lines = max(1, self._row_total() + self._head_lines())
        if lines != self._lines:
            # the height follows the lines up to the CSS cap: a layout pass, but only when
            # the height can move (still under the cap, or shrinking below it)
            height = self.size.height
            grows = not (self._lines > height and lines > height) or not height
            self._lines = lines
            if grows and not force and self._height_follows_lines():
                self._scroll_into_view()
                super().paint(force)
                self.refresh(layout=True)
                return
        self._scroll_into_view()
        super().paint(force)

    def _scroll_into_view(self) -> None:
        n = self._row_total()
        height = self._body_height()
        self.highlighted = max(0, min(self.highlighted, n - 1))
        self._top = max(0, min(self._top, n - height))
        if self.highlighted < self._top:
            self._top = self.highlighted
        elif self.highlighted >= self._top + height:
            self._top = self.highlighted - height + 1
        # What a scrollbar would say, in the title (the short layout has no bottom border).
        title = self.base_title
        if n > height and self.size.height:
            title = f"{title}  {self._top + 1}–{min(n, self._top + height)} of {n}"
        if title != self.border_title:
            self.border_title = title

    # the cursor
    def action_cursor(self, step: int) -> None:
        self.highlighted = max(0, min(self.highlighted + step, self._row_total() - 1))
        self.paint()

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self._body_height() - 1))

    def action_select(self) -> None:
        if 0 <= self.highlighted < self._row_total():
            self._select(self.highlighted)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < self._head_lines():
            return
        row = self._top + offset.y - self._head_lines()
        if not 0 <= row < self._row_total():
            return
        if row == self.highlighted or event.chain > 1:
            self._select(row)
        self.highlighted = row
        self.paint()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.action_cursor(1)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.action_cursor(-1)

    def on_focus(self) -> None:
        self.paint()

    def on_blur(self) -> None:
        self.paint()
