"""The trials ledger: one line per trial, updated as TrialState/TrialResult arrive.

A panel with a cursor, like the alert list: up/down/home/end/page keys or a click move it,
Enter (or a click on the cursor's line) posts ``LedgerTable.Selected`` with the trial. Not a
DataTable: that re-rendered every row on every frame the running trial's live mean moved, and
rebuilt its columns and rows whenever a width changed; here a frame refreshes the lines whose
text changed (usually the running trial's alone), and a width change is a repaint of this panel,
never a layout of the screen.

Columns are sized here: status, difference and verdict are always whole (they are the
campaign's result), the trial name takes what is left and is cut with an ellipsis, and the sd
and # columns go first when the panel is narrow.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow
from tuiapp.tui.widgets.panel import Panel, tone_style

# key -> (title, right-aligned); in display order
COLUMNS = {"index": ("#", True), "name": ("trial", False), "status": ("status", False),
           "mean": ("tok/s", True), "sd": ("sd", True), "delta": ("vs base", True), "verdict": ("verdict", False)}
_DROP_ORDER = ("sd", "index")  # what goes when the panel is too narrow, first to last
_NAME_MIN = 10
_TONED = ("status", "verdict")  # the columns in the trial's status colour


def row_cells(row: TrialRow, store: DashboardStore) -> dict[str, str]:
    result = row.result.row if row.result else {}
    if row.result is None and row.name == store.current_trial:
        mean, sd, _ci95, _n = store.run_stats()  # live figures until the ledger row lands
        result = {"mean_decode_tok_s": mean, "sd_decode_tok_s": sd}
    status = row.result.status if row.result else row.phase
    delta = result.get("delta_pct")
    return {
        "index": str(row.index + 1),
        "name": row.name,
        "status": status,
        "mean": num(result.get("mean_decode_tok_s"), '.1f'),
        "sd": num(result.get("sd_decode_tok_s"), '.2f'),
        "delta": f"{delta:+.1f}%" if delta is not None else "",
        "verdict": str(result.get("verdict") or ("dead end" if row.result and row.result.status != "ok" else "")),
    }


def row_tone(row: TrialRow) -> str:
    status = row.result.status if row.result else row.phase
    if status == "ok":
        return "ok"
    return "running" if row.result is None and status not in ("failed", "skipped") else "failed"


def column_widths(cells: list[dict[str, str]], width: int) -> dict[str, int]:
    """Width per shown column (one space between columns), fitting ``width`` cells."""
    natural = {key: max([len(title), *(len(c[key]) for c in cells)]) for key, (title, _) in COLUMNS.items()}
    shown = dict(natural)
    for key in _DROP_ORDER:
        if sum(shown.values()) + len(shown) - 1 <= width:
            break
        del shown[key]
    spare = width - (sum(shown.values()) - shown["name"]) - (len(shown) - 1)
    shown["name"] = max(_NAME_MIN, min(natural["name"], spare))
    # The last column takes what is left, so every line is the panel's width whatever the
    # cells (the cursor's background and the header's reach the right edge).
    last = list(shown)[-1]
    shown[last] += max(0, width - (sum(shown.values()) + len(shown) - 1))
    return shown


class LedgerTable(Panel, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "ledger--ok", "ledger--failed", "ledger--running", "ledger--header", "ledger--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor(-1000000)", "First", show=False),
        Binding("end", "cursor(1000000)", "Last", show=False),
        Binding("enter", "select", "Select", show=False),
    ]
    panel_key = "trials"

    class Selected(Message):
        """Enter (or a click) on a trial."""

        def __init__(self, ledger: LedgerTable, row: TrialRow) -> None:
            super().__init__()
            self.ledger = ledger
            self.row = row

        @property
        def control(self) -> LedgerTable:
            return self.ledger

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(store, **kwargs)
        self.highlighted = 0  # row of the cursor, in plan order
        self._top = 0  # first row shown
        self._show_header = True
        self._lines = 0  # lines the ledger last asked the layout for
        self.base_title = "trials"

    # what is shown, in plan order
    @property
    def row_count(self) -> int:
        return len(self.store.trials)

    def row_at(self, row: int) -> TrialRow | None:
        rows = self.store.trials
        if not 0 <= row < len(rows):
            return None
        return list(rows.values())[row]

    def row_index(self, name: str) -> int:
        return list(self.store.trials).index(name)

    def shown_cells(self) -> dict[str, dict[str, str]]:
        """Each trial's cells as the columns show them (before fitting), by trial name."""
        return {name: row_cells(row, self.store) for name, row in self.store.trials.items()}

    @property
    def show_header(self) -> bool:
        return self._show_header

    @show_header.setter
    def show_header(self, show: bool) -> None:
        if show != self._show_header:
            self._show_header = show
            self.paint(force=True)

    def _body_height(self) -> int:
        return max(1, self.size.height - self._show_header)

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, self.row_count + self._show_header)  # the CSS caps it; beyond the cap it scrolls

    def view_version(self) -> object:
        return (self.store.versions["trials"], self.highlighted, self._top, self.has_focus, self._show_header)

    def paint(self, force: bool = False) -> None:
        current = self.store.current_trial
        if current in self.store.trials and not self.has_focus:
            self.highlighted = self.row_index(current)  # follow the plan
        lines = max(1, self.row_count + self._show_header)
        if lines != self._lines:
            # height: auto follows the lines up to the CSS cap: a layout pass, but only when
            # the height can move (auto, and still under the cap or shrinking below it)
            height = self.size.height
            grows = not (self._lines > height and lines > height) or not height
            self._lines = lines
            if grows and not force and self.styles.height is not None and self.styles.height.is_auto:
                self._scroll_into_view()
                super().paint(force)
                self.refresh(layout=True)
                return
        self._scroll_into_view()
        super().paint(force)

    def _scroll_into_view(self) -> None:
        n = self.row_count
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

    def render(self) -> Text:
        rows = list(self.store.trials.values())
        if not rows:
            return Text("")
        width = max(1, self.size.width)
        cells = [row_cells(row, self.store) for row in rows]
        widths = column_widths(cells, width)
        last = list(widths)[-1]
        lines = []
        if self._show_header:
            header = "".join(
                (COLUMNS[key][0].rjust(w) if COLUMNS[key][1] else COLUMNS[key][0].ljust(w)) + (" " if key != last else "")
                for key, w in widths.items())
            lines.append(Text(header, self._style("ledger--header")))
        tones = {tone: tone_style(self, f"ledger--{tone}") for tone in ("ok", "failed", "running")}
        cursor = self._style("ledger--cursor")
        for i in range(self._top, min(len(rows), self._top + self._body_height())):
            text = Text()
            tone = tones[row_tone(rows[i])]
            for key, w in widths.items():
                shown = fmt.fit(cells[i][key], w)
                shown = shown.rjust(w) if COLUMNS[key][1] else shown.ljust(w)
                if key != last:
                    shown += " "
                text.append(shown, tone if key in _TONED else None)
            if i == self.highlighted:
                text.stylize(cursor)
            lines.append(text)
        return Text("\n").join(lines)

    def _style(self, component: str) -> Style:
        """A row-wide component's background, colour and weight. From the full style: the
        partial one drops a background's alpha (``$foreground 22%`` came out as the foreground)."""
        full = self.get_component_rich_style(component)
        return Style(color=full.color, bgcolor=full.bgcolor, bold=full.bold)

    # the cursor
    def action_cursor(self, step: int) -> None:
        self.highlighted = max(0, min(self.highlighted + step, self.row_count - 1))
        self.paint()

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self._body_height() - 1))

    def action_select(self) -> None:
        row = self.row_at(self.highlighted)
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < self._show_header:
            return
        row = self._top + offset.y - self._show_header
        if self.row_at(row) is None:
            return
        if row == self.highlighted or event.chain > 1:
            self.action_select()
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

    def on_resize(self) -> None:
        # New column widths and rows in view, so a whole repaint; not paint(force=True), whose
        # layout pass would be a second one for the layout that just resized the ledger.
        self.painted_version = None
        self._painted_text = None
        self.paint()
