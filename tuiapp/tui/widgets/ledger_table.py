"""The trials ledger: one keyed row per trial, updated cell by cell as TrialState/TrialResult arrive.

A DataTable for its cursor and Enter; it changes a few times a minute, so its
re-render-every-row cost (textual-style.md 2.5) does not matter here.

Columns are sized here, not by the table: status, difference and verdict are always whole
(they are the campaign's result), the trial name takes what is left and is cut with an
ellipsis, and the sd and # columns go first when the panel is narrow.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow

# key -> (title, right-aligned); in display order
COLUMNS = {"index": ("#", True), "name": ("trial", False), "status": ("status", False),
           "mean": ("tok/s", True), "sd": ("sd", True), "delta": ("vs base", True), "verdict": ("verdict", False)}
_DROP_ORDER = ("sd", "index")  # what goes when the panel is too narrow, first to last
_NAME_MIN = 10


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
    # The last column takes what is left, so the table's width is the panel's whatever the
    # cells: a column that grows then changes no size, and Textual repaints the ledger
    # alone instead of laying out and redrawing the whole screen.
    last = list(shown)[-1]
    shown[last] += max(0, width - (sum(shown.values()) + len(shown) - 1))
    return shown


class LedgerTable(DataTable):
    COMPONENT_CLASSES = {"ledger--ok", "ledger--failed", "ledger--running"}

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, **kwargs)
        self.store = store
        self.painted_version = -1
        self._cells: dict[str, dict[str, str]] = {}
        self._widths: dict[str, int] = {}

    def on_resize(self) -> None:
        self.paint(force=True)

    def paint(self, force: bool = False) -> None:
        version = self.store.versions["trials"]
        if not force and version == self.painted_version:
            return
        self.painted_version = version
        cells = {name: row_cells(row, self.store) for name, row in self.store.trials.items()}
        # the vertical scrollbar takes its cells only when the rows overflow
        room = self.size.width - (self.styles.scrollbar_size_vertical if len(cells) + 1 > self.size.height else 0)
        widths = column_widths(list(cells.values()), max(room, 1))
        if widths != self._widths or any(name not in cells for name in self._cells):
            self._rebuild(widths, cells)
        else:
            for name, row_cells_now in cells.items():
                row = self.store.trials[name]
                if name not in self._cells:
                    self.add_row(*(self._styled(k, row_cells_now[k], row) for k in widths), key=name)
                    continue
                for key in widths:
                    if force or self._cells[name][key] != row_cells_now[key]:
                        self.update_cell(name, key, self._styled(key, row_cells_now[key], row))
        self._cells = cells
        current = self.store.current_trial
        if current in self._cells and not self.has_focus:
            self.move_cursor(row=self.get_row_index(current), animate=False)  # follow the plan

    def _rebuild(self, widths: dict[str, int], cells: dict[str, dict[str, str]]) -> None:
        """New column widths (a resize, a longer status): the columns again, then the rows."""
        at = self.cursor_row
        self._widths = widths
        self.clear(columns=True)
        last = list(widths)[-1]
        for key, width in widths.items():
            title, right = COLUMNS[key]
            label = title.rjust(width) if right else title
            self.add_column(label + ("" if key == last else " "), key=key, width=width + (key != last))
        for name, row_cells_now in cells.items():
            row = self.store.trials[name]
            self.add_row(*(self._styled(key, row_cells_now[key], row) for key in widths), key=name)
        if self.has_focus and 0 <= at < len(cells):
            self.move_cursor(row=at, animate=False)

    def _styled(self, key: str, value: str, row: TrialRow) -> Text:
        width = self._widths.get(key, len(value))
        _title, right = COLUMNS[key]
        shown = fmt.fit(value, width)
        shown = shown.rjust(width) if right else shown.ljust(width)
        if key != list(self._widths)[-1]:
            shown += " "
        if key not in ("status", "verdict"):
            return Text(shown)
        status = row.result.status if row.result else row.phase
        tone = ("ok" if status == "ok" else "running" if row.result is None and status not in ("failed", "skipped")
                else "failed")
        return Text(shown, self.get_component_rich_style(f"ledger--{tone}", partial=True))
