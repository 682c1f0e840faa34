"""Alerts, newest first, one line each: severity, kind, ranks, time and the message.

A panel with a cursor: up/down/home/end/page keys or a click move it, Enter (or a click on the
cursor's line) posts ``AlertList.Selected`` with the alert. Not an OptionList: that re-adds
every option for a new alert, and its lazy line count and scrollbar toggles cost the whole
screen three layout passes per alert (~20 ms each); here a new alert lays the screen out once,
and only while the list still grows toward its height cap.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.message import Message

from tuiapp.events import Alert
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.cursor_panel import CursorPanel
from tuiapp.tui.widgets.panel import tone_style


def ranks_label(ranks: list[int]) -> str:
    if not ranks:
        return "-"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


class AlertList(CursorPanel):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "alert-list--error", "alert-list--warning", "alert-list--muted", "alert-list--cursor"}
    panel_key = "alerts"

    class Selected(Message):
        """Enter (or a click) on an alert."""

        def __init__(self, alert_list: AlertList, alert: Alert) -> None:
            super().__init__()
            self.alert_list = alert_list
            self.alert = alert

        @property
        def control(self) -> AlertList:
            return self.alert_list

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(store, title="alerts", **kwargs)  # row 0 = the newest alert
        self._newest: object = None  # the newest alert's key: the cursor follows new ones

    # what is shown, newest first
    @property
    def alert_count(self) -> int:
        return len(self.store.alert_order)

    def alert_at(self, row: int) -> Alert | None:
        order = self.store.alert_order
        if not 0 <= row < len(order):
            return None
        return self.store.alerts[order[len(order) - 1 - row]]

    def shown_prompts(self) -> list[str]:
        """Every alert's line as plain text, newest first (what the rows read)."""
        return [self._prompt(self.alert_at(row)).plain for row in range(self.alert_count)]

    def view_version(self) -> object:
        return (self.store.versions["alerts"], self.highlighted, self._top, self.has_focus)

    def _row_total(self) -> int:
        return self.alert_count

    def _select(self, row: int) -> None:
        alert = self.alert_at(row)
        if alert is not None:
            self.post_message(self.Selected(self, alert))

    def _follow(self) -> None:
        order = self.store.alert_order
        newest = order[-1] if order else None
        if newest != self._newest:
            # a new alert: the cursor stays on the alert it was on, or on the newest one if it
            # was there (the list's head is where a failure shows up)
            added = 0
            if self._newest is not None and newest is not None:
                try:
                    added = len(order) - 1 - order.index(self._newest)
                except ValueError:  # a replay seek rebuilt the alerts
                    added = 0
            self._newest = newest
            if self.highlighted and added:
                self.highlighted += added
                self._top += added

    def render(self) -> Text:
        n = self.alert_count
        if not n:
            return Text("no alerts", tone_style(self, "alert-list--muted"))
        width, height = self.size
        cursor = self._cursor_style()
        rows = []
        for row in range(self._top, min(n, self._top + max(1, height))):
            text = self._prompt(self.alert_at(row))
            if row == self.highlighted:
                text.truncate(max(1, width), overflow="ellipsis", pad=True)
                text.stylize(cursor)
            rows.append(text)
        return Text("\n").join(rows)

    def _cursor_style(self) -> Style:
        """The cursor row's background and weight; its text keeps its severity colours. From
        the full style: the partial one drops the background's alpha (``$foreground 22%``
        came out as the foreground itself)."""
        full = self.get_component_rich_style("alert-list--cursor")
        return Style(bgcolor=full.bgcolor, bold=full.bold)

    def _prompt(self, alert: Alert) -> Text:
        tone = tone_style(self, f"alert-list--{alert.severity}")
        muted = tone_style(self, "alert-list--muted")
        when = fmt.clock(self.store.rel_s(alert.t_s))
        head = f"{'ERR ' if alert.severity == 'error' else 'WARN'} {alert.alert_kind:<11}"
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(head, tone + Style(bold=True))
        text.append(f" rank {ranks_label(alert.ranks):<5}", tone)
        if alert.nodes:  # attach --log NODE=...: which nodes printed it
            text.append(f" {','.join(alert.nodes)}", tone)
        text.append(f" {when} ", muted)
        if alert.count > 1:  # a per-request failure: how many requests so far
            text.append(f"x{alert.count} ", tone + Style(bold=True))
        if alert.caused_by:  # a death: the incident it followed
            cause = self.store.alert_by_id(alert.source, alert.caused_by)
            text.append(f"after {cause.alert_kind if cause is not None else 'an error'}: ", muted)
        text.append(alert.message.splitlines()[0] if alert.message else "", tone)
        return text

    def on_resize(self) -> None:
        self.paint(force=True)
