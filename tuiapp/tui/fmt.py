"""Plain-text formatting for the dashboard: numbers with units, n/a, block charts.

Textual-free so it is cheap to test. ``None`` is always shown as n/a, never as 0.
Units, everywhere in tuiapp: memory in binary GiB/MiB (what CUDA and SGLang print),
rates in decimal bytes per second (k = 10^3, M = 10^6, G = 10^9: what PCIe is specified in).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import log10

from tuiapp.common.numfmt import NA

_BLOCKS = " ▁▂▃▄▅▆▇█"


def ms(value_s: float | None) -> str:
    """Seconds shown as milliseconds (TTFT, ITL)."""
    if value_s is None:
        return NA
    value_ms = value_s * 1000
    return f"{value_ms:.0f} ms" if value_ms >= 100 else f"{value_ms:.1f} ms"


def clock(seconds: float | None) -> str:
    """Elapsed seconds as H:MM:SS (or n/a)."""
    if seconds is None:
        return NA
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def spark(values: Sequence[float | None], width: int, *, floor: float | None = None,
          ceiling: float | None = None) -> str:
    """The last ``width`` values as one row of block characters (None is a gap)."""
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    known = [v for v in tail if v is not None]
    if not known:
        return " " * width
    low = min(known) if floor is None else floor
    high = max(known) if ceiling is None else ceiling
    span = high - low
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(_BLOCKS[4])
        else:
            level = round((min(max(v, low), high) - low) / span * 7) + 1
            out.append(_BLOCKS[level])
    return "".join(out).rjust(width)


def bar(fraction: float | None, width: int) -> tuple[str, str]:
    """A horizontal bar split into (filled, empty) parts, each in whole cells."""
    if width <= 0:
        return "", ""
    if fraction is None:
        return "", "·" * width
    filled = round(min(max(fraction, 0.0), 1.0) * width)
    return "█" * filled, "░" * (width - filled)


def fit(text: str, width: int) -> str:
    """Cut to ``width`` cells with an ellipsis (single-width text assumed)."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def zoom_floor(values: Sequence[float | None]) -> float | None:
    """A chart floor just under the smallest value: small changes show, the level stays honest."""
    known = [v for v in values if v is not None]
    return 0.9 * min(known) if known else None


def spark_rows(values: Sequence[float | None], width: int, height: int, *,
               floor: float | None = None, ceiling: float | None = None) -> list[str]:
    """A ``height``-row block chart of the last ``width`` values, top row first."""
    if height <= 1:
        return [spark(values, width, floor=floor, ceiling=ceiling)]
    tail = list(values)[-width:] if width > 0 else []
    known = [v for v in tail if v is not None]
    rows = [[" "] * len(tail) for _ in range(height)]
    if known:
        low = min(known) if floor is None else floor
        high = max(known) if ceiling is None else ceiling
        span = high - low
        for col, v in enumerate(tail):
            if v is None:
                continue
            frac = 0.5 if span <= 0 else (min(max(v, low), high) - low) / span
            eighths = max(1, round(frac * height * 8))
            for row in range(height):  # row 0 is the bottom here
                fill = min(8, max(0, eighths - row * 8))
                rows[height - 1 - row][col] = _BLOCKS[fill]
    return ["".join(r).rjust(width) for r in rows]


def log_levels(values: Sequence[float | None], floor: float, ceiling: float) -> list[float | None]:
    """Values on a log scale from ``floor`` to ``ceiling`` as 0..1 (so 0.5 and 15 GB/s
    differ by three cells of eight, where a linear scale to 63 GB/s puts both at the bottom)."""
    low, span = log10(floor), log10(ceiling) - log10(floor)
    return [None if v is None else min(max((log10(max(v, floor)) - low) / span, 0.0), 1.0) for v in values]


def log_spark(values: Sequence[float | None], width: int, floor: float, ceiling: float) -> str:
    """``spark(log_levels(values[-width:], floor, ceiling), width, floor=0, ceiling=1)`` in one
    pass: a GPU row's PCIe history, 16 of them a frame."""
    if width <= 0:
        return ""
    low, span = log10(floor), log10(ceiling) - log10(floor)
    out = []
    known = False
    for v in values[-width:]:
        if v is None:
            out.append(" ")
            continue
        known = True
        level = min(max((log10(max(v, floor)) - low) / span, 0.0), 1.0)
        out.append(_BLOCKS[round(level * 7) + 1])
    return "".join(out).rjust(width) if known else " " * width


def short(value: float) -> str:
    """An axis label in 4 characters or fewer: 0.85, 9.5, 89, 1.2k."""
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 10_000:
        return f"{value / 1000:.0f}k"
    if a >= 1000:
        return f"{value / 1000:.1f}k"
    if a >= 10:
        return f"{value:.0f}"
    if a >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}"


def axis_chart(values: Sequence[float | None], width: int, height: int, name: str,
               *, scale: float = 1.0, unit: str = "", floor: float | None = None,
               ceiling: float | None = None, label_w: int = 0) -> list[tuple[str, str]]:
    """A block chart with a labelled y axis: ``(axis, bars)`` per row, top row first.

    The axis shows the top of the scale on the first row and its bottom on the last (in
    ``unit`` after multiplying by ``scale``, e.g. seconds shown as ms), and ``name`` on a
    middle row, so every chart says what it plots and on what scale. One row: the name,
    the bars and the range after them. ``label_w``: the axis' least width, so charts
    stacked in one panel line up.
    """
    tail = list(values)
    known = [v for v in tail if v is not None]
    if floor is None:
        floor = zoom_floor(tail[-max(width, 1):])
    if not known:
        return [(name, " " * max(0, width - len(name) - 1))]
    high = max(known[-max(width, 1):]) if ceiling is None else ceiling
    low = floor if floor is not None else min(known)
    top, bottom = short(high * scale) + unit, short(low * scale) + unit
    if height <= 1:
        span = f" {bottom}–{top}"
        return [(name + " ", spark(tail, max(0, width - len(name) - 1 - len(span)), floor=low, ceiling=high) + span)]
    labels = [top] + [""] * (height - 2) + [bottom]
    if height >= 3:
        labels[height // 2] = name
    else:
        labels[0] = f"{name} {top}"
    label_w = max(label_w, *(len(x) for x in labels))
    axis = [x.rjust(label_w) + ("┤" if k in (0, height - 1) else "│") for k, x in enumerate(labels)]
    rows = spark_rows(tail, max(0, width - label_w - 1), height, floor=low, ceiling=high)
    return list(zip(axis, rows, strict=True))
