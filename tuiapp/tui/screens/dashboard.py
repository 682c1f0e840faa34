"""The dashboard: consumes the bus into the store as events come, paints at most 4 times a second."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, OptionList

from tuiapp.bus import Subscription
from tuiapp.controls import SessionView
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.alert_list import AlertList
from tuiapp.tui.widgets.gpu_table import GpuTable
from tuiapp.tui.widgets.header_bar import HeaderBar
from tuiapp.tui.widgets.ledger_table import LedgerTable
from tuiapp.tui.widgets.log_tail import LogTail
from tuiapp.tui.widgets.notes_bar import NotesBar
from tuiapp.tui.widgets.perf_panels import AcceptancePanel, LatencyPanel, ThroughputPanel
from tuiapp.tui.widgets.timeline_bar import TimelineBar

PAINT_INTERVAL_S = 0.25
# Panels a user can hide (key 1-5, or the command palette): id -> label.
TOGGLABLE = {"perf": "throughput/acceptance/latency", "gpus": "GPUs", "alerts": "alerts",
             "trials": "trials ledger", "log": "log tail"}


class DashboardScreen(Screen):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, store: DashboardStore, session: SessionView, events: Subscription) -> None:
        super().__init__()
        self.store = store
        self.session = session
        self.events = events

    def compose(self) -> ComposeResult:
        s = self.store
        yield HeaderBar(s, self.session.title, id="header")
        yield NotesBar(s, id="notes")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                with Horizontal(id="perf"):
                    yield ThroughputPanel(s, id="throughput")
                    yield AcceptancePanel(s, id="acceptance")
                    yield LatencyPanel(s, id="latency")
                yield GpuTable(s, id="gpus")
                yield LogTail(s, id="log-wide")  # the log sits here on wide screens (CSS picks one)
            with Vertical(id="right"):
                yield AlertList(s, id="alerts")
                yield LedgerTable(s, id="trials")
                yield LogTail(s, id="log")
        if self.session.replay is not None:
            yield TimelineBar(self.session.replay, id="timeline")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#throughput").border_title = "decode tok/s"
        self.query_one("#acceptance").border_title = "acceptance"
        self.query_one("#latency").border_title = "latency"
        self.query_one("#gpus").border_title = "GPUs  mem GiB · util · power · temp · PCIe B/s (history: share of link)"
        self.query_one("#log-wide").border_title = "log"
        self.query_one("#alerts").border_title = "alerts (enter: traceback)"
        self.query_one("#trials").border_title = "trials (enter: details)"
        # Looked up once: a DOM query per panel was most of an idle paint's cost.
        self._panels = list(self.query("#header, #notes, #throughput, #acceptance, #latency, #gpus, LogTail"))
        self._alerts = self.query_one(AlertList)
        self._ledger = self.query_one(LedgerTable)
        self._timeline = self.query_one(TimelineBar) if self.session.replay is not None else None
        self._alerts.focus()
        self.consume_events()
        self.set_interval(PAINT_INTERVAL_S, self.paint)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.paint(force=True))
        self.paint(force=True)

    @work(exclusive=True, group="bus")
    async def consume_events(self) -> None:
        apply = self.store.apply
        while (event := await self.events.get()) is not None:
            apply(event)
            for queued in self.events.drain():
                apply(queued)

    def paint(self, force: bool = False) -> None:
        """Repaint the panels whose data changed since the last paint."""
        with self.app.batch_update():
            for panel in self._panels:
                panel.paint(force)
            self._alerts.paint(force)
            self.set_class(bool(self.store.trials), "-has-trials")
            ledger = self._ledger
            # At 80x24 a row of the ledger is worth more than its column titles.
            show_header = not (self.has_class("-short") and self.has_class("-narrow"))
            if ledger.show_header != show_header:
                ledger.show_header = show_header
            ledger.paint(force)
            if self._timeline is not None:
                self._timeline.paint(force)

    def toggle_panel(self, panel_id: str) -> None:
        """Hide or show a panel; done with a screen class so the layout CSS stays in charge."""
        self.toggle_class(f"-hide-{panel_id}")

    def set_errors_only(self, errors_only: bool) -> None:
        for tail in self.query(LogTail):
            tail.errors_only = errors_only

    @on(OptionList.OptionSelected, "#alerts")
    def open_alert(self, event: OptionList.OptionSelected) -> None:
        from tuiapp.tui.screens.details import AlertScreen

        alert = self.query_one(AlertList).alert_for(event.option.id)
        if alert is not None:
            self.app.push_screen(AlertScreen(alert, self.store))

    @on(DataTable.RowSelected, "#trials")
    def open_trial(self, event: DataTable.RowSelected) -> None:
        from tuiapp.tui.screens.details import TrialScreen

        row = self.store.trials.get(str(event.row_key.value))
        if row is not None:
            self.app.push_screen(TrialScreen(row, self.store))
