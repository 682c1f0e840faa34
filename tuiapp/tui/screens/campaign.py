"""The campaign view (trials --slurm; key c): every trial's job, in flight first, with its state,
nodes, queue wait, latest tok/s and incidents. Enter on a trial in flight makes the dashboard
show that trial alone (its server, log, GPUs, runs and alerts); on a finished one, its details;
``a`` goes back to every trial's events."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from tuiapp.tui.campaign_rows import COLUMNS, LIVE_FIRST, campaign_rows, in_flight
from tuiapp.tui.store import DashboardStore

REFRESH_S = 1.0


class CampaignScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,c", "dismiss", "Close"), Binding("a", "show_all", "All trials")]
    DEFAULT_CSS = """
    CampaignScreen { align: center middle; }
    CampaignScreen > Vertical { width: 95%; height: 80%; border: round $accent; background: $surface; }
    CampaignScreen DataTable { height: 1fr; }
    """

    def __init__(self, store: DashboardStore) -> None:
        super().__init__()
        self.store = store
        self._shown: list[tuple[str, ...]] | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="campaign-title")
            yield DataTable(cursor_type="row", zebra_stripes=True, id="campaign-table")
            yield Label("enter: show that trial on the dashboard (a finished one: its details)   "
                        "a: every trial   esc/c: close", id="campaign-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self.refresh_rows()
        self.set_interval(REFRESH_S, self.refresh_rows)
        table.focus()

    def refresh_rows(self) -> None:
        jobs = self.store.trial_jobs
        rows = campaign_rows(jobs)
        self.query_one("#campaign-title", Label).update(
            f"campaign: {in_flight(jobs)} in flight, {len(jobs)} submitted")
        if rows == self._shown:
            return
        self._shown = rows
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for cells in rows:
            # Text, not str: a DataTable reads a str as markup, and a trial name or an
            # incident's text is the server's or the user's, never ours to interpret
            table.add_row(*(Text(c) for c in cells), key=cells[0])
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A trial in flight: the dashboard shows it alone from now on; a finished one: its details."""
        from tuiapp.tui.screens.details import TrialScreen

        name = str(event.row_key.value)
        job = self.store.trial_jobs.get(name)
        controls = getattr(self.app, "session", None) and self.app.session.controls
        focus = getattr(controls, "focus_trial", None)
        if job is not None and job.state in LIVE_FIRST and focus is not None and focus(name):
            self.app.notify(f"dashboard: {name} (campaign view, a: every trial)")
            self.dismiss(None)
            return
        row = self.store.trials.get(name)
        if row is not None:
            self.app.push_screen(TrialScreen(row, self.store))

    def action_show_all(self) -> None:
        controls = getattr(self.app, "session", None) and self.app.session.controls
        focus = getattr(controls, "focus_trial", None)
        if focus is not None and focus(None):
            self.app.notify("dashboard: every trial in flight")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
