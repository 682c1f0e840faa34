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
from textual.message import Message

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow
from tuiapp.tui.widgets.cursor_panel import CursorPanel
from tuiapp.tui.widgets.panel import tone_style

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


class LedgerTable(CursorPanel):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "ledger--ok", "ledger--failed", "ledger--running", "ledger--header", "ledger--cursor"}
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
        super().__init__(store, title="trials", **kwargs)  # rows in plan order
        self._show_header = True

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

    def view_version(self) -> object:
        return (self.store.versions["trials"], self.highlighted, self._top, self.has_focus, self._show_header)

    def _row_total(self) -> int:
        return self.row_count

    def _head_lines(self) -> int:
        return int(self._show_header)

    def _select(self, row: int) -> None:
        trial = self.row_at(row)
        if trial is not None:
            self.post_message(self.Selected(self, trial))

    def _follow(self) -> None:
        current = self.store.current_trial
        if current in self.store.trials and not self.has_focus:
            self.highlighted = self.row_index(current)  # follow the plan

    def _height_follows_lines(self) -> bool:
        return self.styles.height is not None and self.styles.height.is_auto

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

    def on_resize(self) -> None:
        # New column widths and rows in view, so a whole repaint; not paint(force=True), whose
        # layout pass would be a second one for the layout that just resized the ledger.
        self.painted_version = None
        self._painted_text = None
        self.paint()
