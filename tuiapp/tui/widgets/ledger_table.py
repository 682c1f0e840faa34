"""The trials ledger: one keyed row per trial, updated cell by cell as TrialState/TrialResult arrive.

A DataTable for its cursor and Enter; it changes a few times a minute, so its
re-render-every-row cost (textual-style.md 2.5) does not matter here.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow

COLUMNS = (("#", "index"), ("trial", "name"), ("status", "status"), ("tok/s", "mean"),
           ("sd", "sd"), ("verdict", "verdict"))


def row_cells(row: TrialRow, store: DashboardStore) -> dict[str, str]:
    result = row.result.row if row.result else {}
    if row.result is None and row.name == store.current_trial:
        mean, sd, _ci95, _n = store.run_stats()  # live figures until the ledger row lands
        result = {"mean_decode_tok_s": mean, "sd_decode_tok_s": sd}
    status = row.result.status if row.result else row.phase
    return {
        "index": str(row.index + 1),
        "name": row.name,
        "status": status,
        "mean": fmt.num(result.get("mean_decode_tok_s")),
        "sd": fmt.num(result.get("sd_decode_tok_s"), 2),
        "verdict": str(result.get("verdict") or ("dead end" if row.result and row.result.status != "ok" else "")),
    }


class LedgerTable(DataTable):
    COMPONENT_CLASSES = {"ledger--ok", "ledger--failed", "ledger--running"}

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.store = store
        self.painted_version = -1
        self._cells: dict[str, dict[str, str]] = {}

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def paint(self, force: bool = False) -> None:
        version = self.store.versions["trials"]
        if not force and version == self.painted_version:
            return
        self.painted_version = version
        if any(name not in self.store.trials for name in self._cells):  # a replay seeked back
            self.clear()
            self._cells = {}
        for name, row in self.store.trials.items():
            cells = row_cells(row, self.store)
            styled = {key: self._styled(key, value, row) for key, value in cells.items()}
            if name not in self._cells:
                self.add_row(*(styled[key] for _, key in COLUMNS), key=name)
            else:
                for key, value in cells.items():
                    if force or self._cells[name][key] != value:
                        # Columns only grow: re-measuring one that may shrink changes the
                        # table's size, and every size change is a layout of the whole screen.
                        wider = len(value) > self.columns[key].content_width
                        self.update_cell(name, key, styled[key], update_width=wider)
            self._cells[name] = cells
        current = self.store.current_trial
        if current in self._cells and not self.has_focus:
            self.move_cursor(row=self.get_row_index(current), animate=False)  # follow the plan

    def _styled(self, key: str, value: str, row: TrialRow) -> Text:
        if key not in ("status", "verdict"):
            return Text(value)
        status = row.result.status if row.result else row.phase
        tone = ("ok" if status == "ok" else "running" if row.result is None and status not in ("failed", "skipped")
                else "failed")
        return Text(value, self.get_component_rich_style(f"ledger--{tone}", partial=True))
