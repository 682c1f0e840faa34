"""One row per GPU: memory bar, used/total, util, power, temperature, PCIe RX/TX with history.

Rendered as one Text (8 short lines) at most 4 times a second; cheaper than a DataTable,
whose every cell update re-renders all rows (textual-style.md 2.5). Given fewer rows than
GPUs (80x24), it shows the spread over the GPUs in two lines instead. PCIe history is on a
log scale from 10 MB/s to the link's capacity: the campaign's interesting rates (0.5 GB/s
of a NCCL all-reduce, 15 GB/s of the custom one) sit three levels apart, where a linear
scale would draw both at the bottom.
"""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Region

from tuiapp.common.numfmt import gib, mem, num, rate
from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel
from tuiapp.tui.widgets.text_builder import TextBuilder

# SGLang preallocates its KV pool (~90% used is normal); warn only close to the edge.
MEM_WARN = 0.93
MEM_HIGH = 0.97
TEMP_WARN_C = 85
_FIXED_CELLS = 53  # everything on a row except the memory bar and the two histories
_POWER_TEMP_CELLS = 14  # dropped first on a narrow panel
UNITS_FROM_W = 110  # from this width every PCIe figure carries its B/s
_UNIT_CELLS = 6
HISTORY_FLOOR_BYTES_S = 1e7  # the bottom of the log scale: idle links stay below it
_CELLS_KEPT = 4096  # history cells remembered per table (16 histories of 60 readings)


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

    _stale = False
    _STALE_TONES = {"ok": "free", "warn": "free", "error": "free", "rx": "free", "tx": "free",
                    "value": "muted", "label": "muted"}

    def tone(self, name: str):
        return super().tone(self._STALE_TONES.get(name, name) if self._stale else name)

    def on_resize(self) -> None:
        self._title()

    _border_only = False  # set while the subtitle changes: Textual's setter refreshes the whole table

    def refresh(self, *regions: Region, **kwargs) -> GpuTable:
        if self._border_only and not regions and not kwargs:
            # the bottom border, where the subtitle is (regions are relative to the content)
            x, y = self.content_offset
            width, height = self.outer_size
            regions = (Region(-x, height - 1 - y, width, 1),)
        return super().refresh(*regions, **kwargs)

    def paint(self, force: bool = False) -> None:
        super().paint(force)
        self._title()
        subtitle = host_text(self.store.host)
        if subtitle != self._subtitle:  # the host's figures move every sample: repaint their border only
            self._subtitle = subtitle
            self._border_only = True
            try:
                self.border_subtitle = subtitle
            finally:
                self._border_only = False
        if len(self.store.gpus) != self._rows:  # a new GPU: the panel grows (a layout pass)
            self._rows = len(self.store.gpus)
            self.refresh(layout=True)

    def _title(self) -> None:
        s = self.store
        if s.finished and s.gpus:
            last = max(g.t_s for g in s.gpus.values())
            title = f"GPUs  last readings, at {fmt.clock(s.rel_s(last))} (the session is over)"
        elif 0 < self.size.height < len(self.store.gpus):
            title = "GPUs  lowest–highest of each figure"
        else:
            title = (f"GPUs  mem GiB · util · power/limit W · temp · PCIe B/s now, "
                     f"history log {rate(HISTORY_FLOOR_BYTES_S, compact=True)}–{rate(self.history_ceiling(), compact=True)}")
        if title != self.border_title:
            self.border_title = title

    def history_ceiling(self) -> float:
        """Top of the history scale: the widest link, else the busiest sample seen."""
        s = self.store
        links = [b for b in (link_bytes_s(g) for g in s.gpus.values()) if b]
        if links:
            return max(links)
        peaks = [v for hist in (*s.gpu_rx.values(), *s.gpu_tx.values()) for v in hist if v is not None]
        return max([HISTORY_FLOOR_BYTES_S * 10, *peaks])

    def render(self) -> Text:
        s = self.store
        if not s.gpus:
            return Text("no GPU samples (telemetry off or not started)", self.tone("muted"))
        # nothing reads the GPUs any more: the last readings, greyed (bars fainter than figures)
        self._stale = s.finished
        return self._text()

    def _text(self) -> Text:
        s = self.store
        width, height = self.size  # a lookup through the screen's map each time: once per render
        if 0 < height < len(s.gpus):
            return self._summary()
        units = width >= UNITS_FROM_W
        spare = max(0, width - _FIXED_CELLS - (_UNIT_CELLS if units else 0))
        power_temp = spare >= 16
        if not power_temp:
            spare += _POWER_TEMP_CELLS
        bar_w = max(4, spare // 3)
        hist_w = max(0, (spare - bar_w) // 2)
        ceiling = self.history_ceiling()
        tones = {name: self.tone(name) for name in _ROW_TONES}
        out = TextBuilder()
        for n, i in enumerate(sorted(s.gpus)):
            if n:
                out.add("\n")
            self._row(out, tones, s.gpus[i], bar_w, hist_w, link_bytes_s(s.gpus[i]) or ceiling, power_temp, units)
        return out.text()

    def _summary(self) -> Text:
        """Two lines for all GPUs: the range of each figure and the busiest GPU's PCIe."""
        t = self.tone
        gpus = [self.store.gpus[i] for i in sorted(self.store.gpus)]

        def spread(values, digits: int = 0, unit: str = "") -> str:
            known = [v for v in values if v is not None]
            if not known:
                return fmt.NA
            low, high = min(known), max(known)
            return num(low, f'.{digits}f', unit) if low == high else f"{num(low, f'.{digits}f')}–{num(high, f'.{digits}f', unit)}"

        first = Text(no_wrap=True, overflow="ellipsis")
        first.append(f"{len(gpus)} GPUs  mem ", t("label"))
        used = [g.mem_used_bytes / 2**30 if g.mem_used_bytes is not None else None for g in gpus]
        total = max((g.mem_total_bytes or 0 for g in gpus), default=0)
        fracs = [g.mem_used_bytes / g.mem_total_bytes for g in gpus if g.mem_used_bytes is not None and g.mem_total_bytes]
        first.append(f"{spread(used, 1)}/{gib(total or None, 0)} GiB", t(mem_tone(max(fracs) if fracs else None)))
        first.append("  util ", t("label"))
        first.append(spread([g.util_pct for g in gpus], 0, "%"), t("value"))
        first.append("  ", t("label"))
        limits = {g.power_limit_w for g in gpus if g.power_limit_w}
        limit = f"/{limits.pop():.0f}" if len(limits) == 1 else ""
        first.append(spread([g.power_w for g in gpus], 0) + limit + "W", t("value"))
        first.append(" ", t("label"))
        first.append(spread([g.temp_c for g in gpus], 0, "C"), t("value"))
        second = Text(no_wrap=True, overflow="ellipsis")
        for label, attr, tone in (("rx", "pcie_rx_bytes_s", "rx"), ("tx", "pcie_tx_bytes_s", "tx")):
            values = [getattr(g, attr) for g in gpus]
            known = [(v, g.index) for v, g in zip(values, gpus, strict=True) if v is not None]
            second.append(f"PCIe {label} ", t("label"))
            if known:
                top, where = max(known)
                low = rate(min(v for v, _ in known), compact=True)
                second.append(f"{low}B/s" if low == rate(top, compact=True) else f"{low}–{rate(top, compact=True)}B/s", t(tone))
                second.append(f" (max GPU {where})  ", t("muted"))
            else:
                second.append(f"{fmt.NA}  ", t("muted"))
        return Text("\n", no_wrap=True).join([first, second][: max(1, self.size.height)])

    def _row(self, row: TextBuilder, t: dict, g, bar_w: int, hist_w: int, ceiling: float,
             power_temp: bool = True, units: bool = True) -> None:
        frac = (g.mem_used_bytes / g.mem_total_bytes
                if g.mem_used_bytes is not None and g.mem_total_bytes else None)
        add = row.add
        add(f"{g.index:>2} ", t["label"])
        used, free = fmt.bar(frac, bar_w)
        add(used, t[mem_tone(frac)])
        add(free, t["free"])
        mem = f"{gib(g.mem_used_bytes)}/{gib(g.mem_total_bytes, 0)}"
        add(f" {mem:>9}", t[mem_tone(frac) if frac is not None and frac >= MEM_WARN
                            else "value" if frac is not None else "muted"])
        add(f" {num(g.util_pct, '.0f', '%'):>4}", t["value" if g.util_pct is not None else "muted"])
        if power_temp:
            # against the board's limit (a GPU at its cap is power-throttled, not idle)
            limit = f"/{g.power_limit_w:.0f}" if g.power_limit_w else ""
            near = g.power_w is not None and g.power_limit_w and g.power_w >= 0.95 * g.power_limit_w
            add(f" {num(g.power_w, '.0f') + limit + 'W':>8}",
                t["warn" if near else "value" if g.power_w is not None else "muted"])
            hot = g.temp_c is not None and g.temp_c >= TEMP_WARN_C
            add(f" {num(g.temp_c, '.0f', 'C'):>4}", t["warn" if hot else "value" if g.temp_c is not None else "muted"])
        for label, value, hist, tone in (("rx", g.pcie_rx_bytes_s, self.store.gpu_rx[g.index], "rx"),
                                         ("tx", g.pcie_tx_bytes_s, self.store.gpu_tx[g.index], "tx")):
            add(f" {label} ", t["label"])
            load = value / ceiling if value is not None else None
            tone_now = ("muted" if load is None else "error" if load >= PCIE_HIGH
                        else "warn" if load >= PCIE_WARN else "value")
            # the unit on every figure where the row has room, not only in the title
            add(f"{rate(value, compact=True):>5}" + ("B/s" if units else ""), t[tone_now])
            add(" ")
            add(self._history(hist, hist_w, ceiling), t[tone])

    def _history(self, hist, width: int, ceiling: float) -> str:
        """A PCIe history as block characters (fmt.log_spark): each reading's cell is worked
        out once, not again on every frame it stays in view (16 histories of ~30 a frame)."""
        if width <= 0:
            return ""
        cells = self.__dict__.get("_cells")
        if cells is None or cells[0] != ceiling or len(cells[1]) > _CELLS_KEPT:
            cells = self._cells = (ceiling, {})
        memo = cells[1]
        out = []
        for value in list(hist)[-width:]:
            cell = memo.get(value)
            if cell is None:
                cell = memo[value] = fmt.log_spark([value], 1, HISTORY_FLOOR_BYTES_S, ceiling)
            out.append(cell)
        return "".join(out).rjust(width)


_ROW_TONES = ("label", "free", "muted", "value", "ok", "warn", "error", "rx", "tx")


def host_text(host) -> str:
    """The machine under the GPUs: host CPU and memory, and the server's process tree RSS."""
    if host is None:
        return ""
    parts = [f"host cpu {num(host.cpu_pct, '.0f')}%"]
    if host.mem_used_bytes is not None and host.mem_total_bytes:
        parts.append(f"mem {gib(host.mem_used_bytes)}/{gib(host.mem_total_bytes, 0)} GiB")
    if host.server_rss_bytes is not None:
        parts.append(f"server rss {mem(host.server_rss_bytes)}")
    return " · ".join(parts)
