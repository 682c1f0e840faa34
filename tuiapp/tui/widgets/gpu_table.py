"""One row per GPU: memory bar, used/total, util, power, temperature, PCIe RX/TX with history.

Rendered as one Text (8 short lines) at most 4 times a second; cheaper than a DataTable,
whose every cell update re-renders all rows (textual-style.md 2.5).
"""

from __future__ import annotations

from rich.text import Text

from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel

# SGLang preallocates its KV pool (~90% used is normal); warn only close to the edge.
MEM_WARN = 0.93
MEM_HIGH = 0.97
TEMP_WARN_C = 85
_FIXED_CELLS = 49  # everything on a row except the memory bar and the two histories


def mem_tone(fraction: float | None) -> str:
    if fraction is None:
        return "muted"
    return "error" if fraction >= MEM_HIGH else "warn" if fraction >= MEM_WARN else "ok"


class GpuTable(Panel):
    panel_key = "gpus"

    _rows = 0

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, len(self.store.gpus))

    def paint(self, force: bool = False) -> None:
        super().paint(force)
        if len(self.store.gpus) != self._rows:  # a new GPU: the panel grows (a layout pass)
            self._rows = len(self.store.gpus)
            self.refresh(layout=True)

    def render(self) -> Text:
        s = self.store
        if not s.gpus:
            return Text("no GPU samples (telemetry off or not started)", self.tone("muted"))
        spare = max(0, self.size.width - _FIXED_CELLS)
        bar_w = max(4, spare // 3)
        hist_w = max(0, (spare - bar_w) // 2)
        # One scale for every GPU's PCIe history, so a saturated link stands out.
        peaks = [v for hist in (*s.gpu_rx.values(), *s.gpu_tx.values()) for v in hist if v is not None]
        ceiling = max([1e6, *peaks])
        lines = [self._row(s.gpus[i], bar_w, hist_w, ceiling) for i in sorted(s.gpus)]
        return Text("\n", no_wrap=True).join(lines)

    def _row(self, g, bar_w: int, hist_w: int, ceiling: float) -> Text:
        t = self.tone
        frac = (g.mem_used_bytes / g.mem_total_bytes
                if g.mem_used_bytes is not None and g.mem_total_bytes else None)
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append(f"{g.index:>2} ", t("label"))
        used, free = fmt.bar(frac, bar_w)
        row.append(used, t(mem_tone(frac)))
        row.append(free, t("free"))
        mem = f"{fmt.gib(g.mem_used_bytes)}/{fmt.gib(g.mem_total_bytes, 0)}G"
        row.append(f" {mem:>10}", t(mem_tone(frac) if frac is not None and frac >= MEM_WARN else "value"))
        row.append(f" {fmt.num(g.util_pct, 0, '%'):>4}", t("value" if g.util_pct is not None else "muted"))
        row.append(f" {fmt.num(g.power_w, 0, 'W'):>4}", t("value" if g.power_w is not None else "muted"))
        hot = g.temp_c is not None and g.temp_c >= TEMP_WARN_C
        row.append(f" {fmt.num(g.temp_c, 0, 'C'):>4}", t("warn" if hot else "value" if g.temp_c is not None else "muted"))
        for label, value, hist, tone in (("rx", g.pcie_rx_bytes_s, self.store.gpu_rx[g.index], "rx"),
                                         ("tx", g.pcie_tx_bytes_s, self.store.gpu_tx[g.index], "tx")):
            row.append(f" {label} ", t("label"))
            row.append(f"{fmt.rate(value):>5}", t("value" if value is not None else "muted"))
            row.append(" ")
            row.append(fmt.spark(hist, hist_w, floor=0, ceiling=ceiling), t(tone))
        return row
