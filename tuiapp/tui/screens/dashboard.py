"""The dashboard: consumes the bus into the store as events come, paints a frame when data
arrived (at most one a second, so a figure waits < 1 s), alerts and a run's figures the
moment they come."""

from __future__ import annotations

import time

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer

from tuiapp.bus import Subscription
from tuiapp.controls import SessionView
from tuiapp.tui import banded_update
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.alert_list import AlertList
from tuiapp.tui.widgets.curve_panel import CurvePanel
from tuiapp.tui.widgets.gpu_table import GpuTable
from tuiapp.tui.widgets.header_bar import HeaderBar
from tuiapp.tui.widgets.ledger_table import LedgerTable
from tuiapp.tui.widgets.log_tail import LogTail
from tuiapp.tui.widgets.notes_bar import NotesBar
from tuiapp.tui.widgets.perf_panels import (
    AcceptancePanel,
    LatencyPanel,
    ServerPanel,
    ThroughputPanel,
)
from tuiapp.tui.widgets.progress_line import ProgressLine
from tuiapp.tui.widgets.spec_positions import SpecPositionsPanel
from tuiapp.tui.widgets.timeline_bar import TimelineBar

# Frames follow the data: the first event after a quiet spell paints COALESCE_S later (what
# comes with it paints with it), later ones wait for FRAME_S after the last frame. Every panel
# that changed repaints in the same frame: Textual's compositor costs per frame, so one frame
# a second costs about half of 2-3 unaligned ones (0.25 s ticks, panels at 0.5/0.75/1 s).
FRAME_S = 1.0
COALESCE_S = 0.05
# Panels a user can hide (key 1-5, or the command palette): id -> label.
TOGGLABLE = {"perf": "throughput/acceptance/latency/curves", "gpus": "GPUs", "alerts": "alerts",
             "trials": "trials ledger", "log": "log tail"}


class DashboardScreen(Screen):
    BINDINGS = [Binding("a", "toggle_polling", "Polling", show=False)]
    # two columns from 150: below it a four-panel perf row beside a 60-column ledger cuts its figures
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, store: DashboardStore, session: SessionView, events: Subscription) -> None:
        super().__init__()
        self.store = store
        self.session = session
        self.events = events
        # The classes the first paint would set, set before the screen is styled: set by that
        # paint they would restyle the whole screen a second time at start.
        self.add_class(*(name for name, on in self._wanted_classes().items() if on), update=False)

    def compose(self) -> ComposeResult:
        s = self.store
        yield HeaderBar(s, self.session.title, id="header")
        yield NotesBar(s, id="notes")
        yield ProgressLine(s, id="progress")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                with Horizontal(id="perf"):
                    yield ThroughputPanel(s, id="throughput")
                    with Vertical(id="spec"):  # acceptance over acceptance per position: one column
                        yield AcceptancePanel(s, id="acceptance")
                        yield SpecPositionsPanel(s, id="spec-positions")  # shown once speculation is known
                    yield LatencyPanel(s, id="latency")
                    yield ServerPanel(s, id="server-row")  # narrow screens and one column (CSS picks one)
                yield CurvePanel(s, id="curve")
                yield GpuTable(s, id="gpus")
                yield LogTail(s, id="log-wide")  # the log sits here on wide screens (CSS picks one)
            with Vertical(id="right"):
                yield ServerPanel(s, id="server")
                yield AlertList(s, id="alerts")
                yield LedgerTable(s, id="trials")
                yield LogTail(s, id="log")
        if self.session.replay is not None:
            yield TimelineBar(self.session.replay, id="timeline")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        banded_update.install(self)  # a frame renders the rows it sends, not the screen
        self.query_one("#throughput").border_title = "throughput"
        self.query_one("#latency").border_title = "latency ms"
        for server in self.query(ServerPanel):
            server.border_title = "server now"
        self.query_one("#curve").border_title = "load curves"
        self.query_one("#log-wide").border_title = "log"
        self.query_one(AlertList).base_title = "alerts (enter: traceback)"
        self.query_one(LedgerTable).base_title = "trials (enter: details)"
        # Looked up once: a DOM query per panel was most of an idle paint's cost.
        self._panels = list(self.query("#header, #notes, #progress, #throughput, #acceptance, #latency, "
                                       "ServerPanel, #curve, #gpus, LogTail"))
        self._alerts = self.query_one(AlertList)
        self._acceptance = self.query_one(AcceptancePanel)
        self._spec_positions = self.query_one(SpecPositionsPanel)
        self._spec_column = self.query_one("#spec")
        self._panels.append(self._spec_positions)
        self._run_panels = list(self.query("#throughput, #acceptance, #latency, #curve"))
        self._ledger = self.query_one(LedgerTable)
        self._timeline = self.query_one(TimelineBar) if self.session.replay is not None else None
        self._alerts.focus()
        self._frame_due = False
        self._frame_s = float("-inf")  # monotonic time of the last frame
        self._alerts_version = -1  # the store's alerts version last handed to the alert list
        self._run_painted: tuple = (None, None)  # the store's last run and summary, painted at once
        self.events.lazy_due_s = self._lazy_due_s
        self.consume_events()
        if self._timeline is not None:  # play/pause/speed move the timeline without an event
            self.set_interval(FRAME_S, self.want_frame)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.paint(force=True))
        self.paint(force=True)

    @work(exclusive=True, group="bus")
    async def consume_events(self) -> None:
        versions = self.store.versions
        summary = self.app.summary_printer.handle
        while (event := await self.events.get()) is not None:
            self.store.apply(event)
            summary(event)
            self.apply_queued()
            if versions["alerts"] != self._alerts_version:
                self._alerts_version = versions["alerts"]
                self._alerts.paint()  # a failure is shown as it arrives, not at the next frame
            # the event that woke us is the oldest queued (often a request): look at the store
            store = self.store
            if store.last_run is not self._run_painted[0] or store.summary is not self._run_painted[1]:
                self._run_painted = (store.last_run, store.summary)
                self.paint_run()
            self.want_frame()

    def paint_run(self) -> None:
        """A run's figures as it lands: the next frame may be up to FRAME_S away, and a
        run's tok/s is what the user waits for (~0.3 runs a second at concurrency 1; only
        the panels it changed refresh, and the next frame skips them)."""
        with self.app.batch_update():
            for panel in self._run_panels:
                panel.paint(urgent=True)
            self._ledger.paint()

    def _lazy_due_s(self, now_s: float) -> float:
        """When dense events (samples, log lines, requests) reach us: just before the next
        frame may paint, so they are as fresh on screen as if each had woken us."""
        # the loop's clock is time.monotonic(), as _frame_s is
        return max(now_s, self._frame_s + FRAME_S - COALESCE_S)

    def want_frame(self) -> None:
        """Paint soon: at once after a quiet spell, else FRAME_S after the last frame."""
        if self._frame_due:
            return
        self._frame_due = True
        self.set_timer(max(COALESCE_S, self._frame_s + FRAME_S - time.monotonic()), self._frame)

    def _frame(self) -> None:
        self._frame_due = False
        self._frame_s = time.monotonic()
        self.apply_queued()
        self.paint()

    def apply_queued(self) -> None:
        """Take into the store what waits in the queue (dense events wait for the frame)."""
        apply, summary = self.store.apply, self.app.summary_printer.handle
        for event in self.events.drain():
            apply(event)
            summary(event)

    def paint(self, force: bool = False) -> None:
        """Repaint the panels whose data changed since the last paint."""
        with self.app.batch_update():
            for panel in self._panels:
                panel.paint(force)
            self._alerts.paint(force)
            wanted = self._wanted_classes()
            changed = [name for name, on in wanted.items() if self.has_class(name) != on]
            if changed:
                # Each class change restyles the whole screen (~25 ms): one pass for them all.
                for name in changed:
                    self.set_class(wanted[name], name, update=False)
                self.update_node_styles()
            # speculation comes and goes with the trials: a class of its panel, restyled alone
            # (~2 ms), not of the screen
            spec_off = self.store.speculating is False
            if self._acceptance.has_class("-spec-off") != spec_off:
                self._acceptance.set_class(spec_off, "-spec-off")
            self._spec_positions.sync_shown()
            column_off = spec_off and not self._spec_positions.has_class("-shown")
            if self._spec_column.has_class("-spec-off") != column_off:  # the others share the row
                self._spec_column.set_class(column_off, "-spec-off")
            ledger = self._ledger
            # At 80x24 a row of the ledger is worth more than its column titles.
            show_header = not (self.has_class("-short") and self.has_class("-narrow"))
            if ledger.show_header != show_header:
                ledger.show_header = show_header
            ledger.paint(force)
            if self._timeline is not None:
                self._timeline.paint(force)

    def _wanted_classes(self) -> dict[str, bool]:
        """The screen's classes the store asks for (the layout CSS reads them)."""
        store = self.store
        mode = store.mode
        return {"-has-trials": bool(store.trials), "-cramped": self._cramped(),
                "-mode-single": mode == "single", "-mode-campaign": mode == "campaign",
                "-mode-curve": mode == "curve",
                # only the single-server and curve layouts place the log by it: in a campaign
                # it would restyle the whole screen for nothing when the first line comes
                "-has-log": bool(store.log) and mode != "campaign",
                "-has-progress": store.progress() is not None,
                "-failed": mode == "single" and store.failure() is not None}

    def _cramped(self) -> bool:
        """Short and narrow: do one row per GPU and what this mode shows first not fit? (Then
        the GPUs take two lines: the ledger, the charts or the curve come first.)"""
        if not (self.has_class("-short") and self.has_class("-narrow")):
            return False
        s = self.store
        mode = s.mode
        if mode == "campaign":
            first = len(s.trials) + 1
        elif mode == "curve":
            first = 12 + (min(6, len(s.trials) + 1) if s.trials else 0)  # the curve's least
        else:
            first = 6 + (3 if s.log else 0)  # figures with a chart, a few log lines
        # header, notes, progress, perf, the GPU rows and the alerts with their rules, footer
        wanted = (1 + bool(s.notes) + (s.progress() is not None) + 4 + (len(s.gpus) + 1)
                  + min(4, len(s.alert_order) + 1) + first + 1)
        return self.size.height < wanted

    def toggle_panel(self, panel_id: str) -> None:
        """Hide or show a panel; done with a screen class so the layout CSS stays in charge."""
        self.toggle_class(f"-hide-{panel_id}")

    def action_toggle_polling(self) -> None:
        """Show or hide the access-log lines of our own polling in the log tail."""
        for tail in self.query(LogTail):
            tail.hide_polling = not tail.hide_polling

    def set_errors_only(self, errors_only: bool) -> None:
        for tail in self.query(LogTail):
            tail.errors_only = errors_only

    @on(AlertList.Selected, "#alerts")
    def open_alert(self, event: AlertList.Selected) -> None:
        from tuiapp.tui.screens.details import AlertScreen

        self.app.push_screen(AlertScreen(event.alert, self.store))

    @on(LedgerTable.Selected, "#trials")
    def open_trial(self, event: LedgerTable.Selected) -> None:
        from tuiapp.tui.screens.details import TrialScreen

        self.app.push_screen(TrialScreen(event.row, self.store))
