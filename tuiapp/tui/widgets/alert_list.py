"""Alerts, newest first, one line each: severity, kind, ranks, time and the message.

An OptionList so the cursor and Enter work without a mouse; selecting posts
``OptionSelected`` whose option id is the alert's position in ``store.alert_order``.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tuiapp.events import Alert
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore


def ranks_label(ranks: list[int]) -> str:
    if not ranks:
        return "-"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


class AlertList(OptionList):
    COMPONENT_CLASSES = {"alert-list--error", "alert-list--warning", "alert-list--muted"}

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.painted_version = -1

    def alert_for(self, option_id: str | None) -> Alert | None:
        if option_id is None or not option_id.startswith("alert-"):
            return None
        key = self.store.alert_order[int(option_id.removeprefix("alert-"))]
        return self.store.alerts[key]

    def paint(self, force: bool = False) -> None:
        version = self.store.versions["alerts"]
        if not force and version == self.painted_version:
            return
        self.painted_version = version
        # The cursor follows the newest alert unless the user moved it down the list.
        highlighted = self.highlighted_option.id if self.highlighted_option and self.highlighted else None
        order = self.store.alert_order
        options = [Option(self._prompt(self.store.alerts[order[i]]), id=f"alert-{i}")
                   for i in reversed(range(len(order)))]
        if not options:
            options = [Option(Text("no alerts", self.get_component_rich_style("alert-list--muted", partial=True)),
                              id="none", disabled=True)]
        self.set_options(options)
        if highlighted is not None and highlighted != "none":
            self.highlighted = self.get_option_index(highlighted)
        elif options[0].id != "none":
            self.highlighted = 0

    def _prompt(self, alert: Alert) -> Text:
        tone = self.get_component_rich_style(f"alert-list--{alert.severity}", partial=True)
        muted = self.get_component_rich_style("alert-list--muted", partial=True)
        when = fmt.clock(self.store.rel_s(alert.t_s))
        head = f"{'ERR ' if alert.severity == 'error' else 'WARN'} {alert.alert_kind:<11}"
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(head, tone + Style(bold=True))
        text.append(f" rank {ranks_label(alert.ranks):<5}", tone)
        if alert.nodes:  # attach --log NODE=...: which nodes printed it
            text.append(f" {','.join(alert.nodes)}", tone)
        text.append(f" {when} ", muted)
        text.append(alert.message.splitlines()[0] if alert.message else "", tone)
        return text
