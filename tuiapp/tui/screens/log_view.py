"""The whole log kept in memory (last 5000 records), scrollable, filterable to errors."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, RichLog

from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.log_tail import is_polling, log_line_text
from tuiapp.tui.widgets.panel import tone_style


class LogScreen(Screen):
    BINDINGS = [Binding("escape,q,l", "app.pop_screen", "Back"),
                Binding("e", "toggle_errors", "Errors only"),
                Binding("a", "toggle_polling", "Polling lines")]
    COMPONENT_CLASSES = {"log-screen--muted", "log-screen--label", "log-screen--error",
                         "log-screen--warn", "log-screen--value"}

    def __init__(self, store: DashboardStore) -> None:
        super().__init__()
        self.store = store
        self.errors_only = False
        self.hide_polling = True
        self._written = 0
        self._log = store.log  # the store's deque; a replay seek replaces it

    def compose(self) -> ComposeResult:
        yield RichLog(id="log-full", max_lines=5000, wrap=False, markup=False, auto_scroll=True)
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.set_interval(1.0, self.append_new)

    def _tones(self) -> dict[str, object]:
        return {name: tone_style(self, f"log-screen--{name}")
                for name in ("muted", "label", "error", "warn", "value")}

    def _write(self, lines) -> None:
        view, tones = self.query_one(RichLog), self._tones()
        for line in lines:
            if (not self.errors_only or line.level != "info") and not (self.hide_polling and is_polling(line)):
                view.write(log_line_text(line, self.store.rel_s(line.t_s), tones, full=True))

    def reload(self) -> None:
        self.query_one(RichLog).clear()
        self.query_one(RichLog).border_title = ("log - errors only" if self.errors_only else "log") + (
            "  (our polling requests hidden; a shows them)" if self.hide_polling else "")
        self._log = self.store.log
        self._write(self.store.log)
        self._written = self.store.log_total

    def append_new(self) -> None:
        if self.store.log is not self._log:  # a replay seek started the store afresh
            self.reload()
            return
        new = self.store.log_total - self._written
        if new > 0:
            self._write(list(self.store.log)[-min(new, len(self.store.log)):])
            self._written = self.store.log_total

    def action_toggle_errors(self) -> None:
        self.errors_only = not self.errors_only
        self.reload()

    def action_toggle_polling(self) -> None:
        self.hide_polling = not self.hide_polling
        self.reload()
