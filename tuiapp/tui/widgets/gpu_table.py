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


# Usable bytes/s per lane and direction after line coding (Gen1-2 8b/10b, Gen3+ 128b/130b).
_LANE_BYTES_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}
PCIE_WARN = 0.7
PCIE_HIGH = 0.9


def link_bytes_s(g) -> float | None:
    """The link's capacity per direction, from its maximum generation and width (an idle
    link drops to Gen1, which is not what it can carry)."""
    gen = g.pcie_gen_max or g.pcie_gen
    width = g.pcie_width_max or g.pcie_width
    return _LANE_BYTES_S[gen] * width if gen in _LANE_BYTES_S and width else None


def mem_tone(fraction: float | None) -> str:
    if fraction is None:
        return "muted"
    return "error" if fraction >= MEM_HIGH else "warn" if fraction >= MEM_WARN else "ok"


class GpuTable(Panel):
    panel_key = "gpus"
    # The costliest panel to draw; its samples come every 0.25-1 s and every one moves the
    # histories, so comparing texts first would only draw it twice.
    min_interval_s = 0.75
    compare_text = False

    _rows = 0
    _subtitle = ""

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, len(self.store.gpus))

    def paint(self, force: bool = False) -> None:
        super().paint(force)
        subtitle = host_text(self.store.host)
        if subtitle != self._subtitle:  # setting it refreshes the whole table, changed or not
            self._subtitle = self.border_subtitle = subtitle
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
        # History on the link's capacity, so a saturated link stands out; the busiest link
        # seen sets the scale where the capacity is unknown.
        peaks = [v for hist in (*s.gpu_rx.values(), *s.gpu_tx.values()) for v in hist if v is not None]
        observed = max([1e6, *peaks])
        lines = [self._row(s.gpus[i], bar_w, hist_w, link_bytes_s(s.gpus[i]) or observed) for i in sorted(s.gpus)]
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
            load = value / ceiling if value is not None else None
            tone_now = ("muted" if load is None else "error" if load >= PCIE_HIGH
                        else "warn" if load >= PCIE_WARN else "value")
            row.append(f"{fmt.rate(value):>5}", t(tone_now))
            row.append(" ")
            row.append(fmt.spark(hist, hist_w, floor=0, ceiling=ceiling), t(tone))
        return row


def host_text(host) -> str:
    """The machine under the GPUs: host CPU and memory, and the server's process tree RSS."""
    if host is None:
        return ""
    parts = [f"host cpu {fmt.num(host.cpu_pct, 0)}%"]
    if host.mem_used_bytes is not None and host.mem_total_bytes:
        parts.append(f"mem {fmt.gib(host.mem_used_bytes)}/{fmt.gib(host.mem_total_bytes, 0)}G")
    if host.server_rss_bytes is not None:
        parts.append(f"server rss {fmt.rate(host.server_rss_bytes)}B")
    return " · ".join(parts)
