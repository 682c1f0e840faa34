"""Modal detail screens: an alert with its traceback, a trial with its ledger row, a yes/no question."""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tuiapp.events import Alert
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow
from tuiapp.tui.widgets.alert_list import ranks_label


class _DetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="detail"):
            yield Label(self.title_text, id="detail-title")
            with VerticalScroll(id="detail-scroll"):
                yield Static(self.body, id="detail-body")
            yield Label("esc/enter: close   ↑ ↓ pgup pgdn: scroll", id="detail-hint")

    def on_mount(self) -> None:
        self.query_one("#detail-scroll").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def alert_text(alert: Alert, store: DashboardStore) -> Text:
    body = Text()
    rows = (("kind", alert.alert_kind), ("severity", alert.severity), ("ranks", ranks_label(alert.ranks)),
            ("source", alert.source), ("time", fmt.clock(store.rel_s(alert.t_s))),
            ("log line", str(alert.first_line) if alert.first_line is not None else fmt.NA))
    for label, value in rows:
        body.append(f"{label:<9}", "bold")
        body.append(f"{value}\n")
    body.append("\n")
    body.append(alert.message + "\n\n", "bold")
    body.append(alert.traceback or "(no traceback recorded)")
    return body


class AlertScreen(_DetailScreen):
    def __init__(self, alert: Alert, store: DashboardStore) -> None:
        self.alert = alert
        super().__init__(f"{alert.severity.upper()} {alert.alert_kind}: ranks {ranks_label(alert.ranks)}",
                         alert_text(alert, store))


def trial_text(row: TrialRow, store: DashboardStore) -> Text:
    body = Text()
    body.append(f"phase    {row.phase}  {row.message}\n")
    if row.result is None:
        body.append("no ledger row yet\n")
    else:
        data = dict(row.result.row)
        diff = data.pop("diff", None)
        body.append(f"status   {row.result.status}\n\n", "bold")
        body.append("diff against the baseline\n", "bold")
        if isinstance(diff, dict) and diff:
            for knob, change in diff.items():
                body.append(f"  {knob}: {json.dumps(change, default=str)}\n")
        else:
            body.append(f"  {json.dumps(diff, default=str) if diff else 'none'}\n")
        body.append("\nrow\n", "bold")
        for key, value in data.items():
            body.append(f"  {key}: {json.dumps(value, default=str)}\n")
    alerts = [store.alerts[key] for key in row.alert_keys]
    body.append(f"\nalerts ({len(alerts)})\n", "bold")
    for alert in alerts:
        body.append(f"  {alert.severity} {alert.alert_kind} ranks {ranks_label(alert.ranks)}: {alert.message}\n")
    return body


class TrialScreen(_DetailScreen):
    def __init__(self, row: TrialRow, store: DashboardStore) -> None:
        super().__init__(f"trial {row.index + 1}/{row.total}: {row.name}", trial_text(row, store))


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.question, id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
