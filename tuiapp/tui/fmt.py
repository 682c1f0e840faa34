"""Plain-text formatting for the dashboard: numbers with units, n/a, block sparklines.

Textual-free so it is cheap to test. ``None`` is always shown as n/a, never as 0.
"""

from __future__ import annotations

from collections.abc import Sequence

NA = "n/a"
_BLOCKS = " ▁▂▃▄▅▆▇█"
_GIB = 1024**3


def num(value: float | None, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return NA
    return f"{value:.{digits}f}{unit}"


def ms(value_s: float | None) -> str:
    """Seconds shown as milliseconds (TTFT, ITL)."""
    if value_s is None:
        return NA
    value_ms = value_s * 1000
    return f"{value_ms:.0f} ms" if value_ms >= 100 else f"{value_ms:.1f} ms"


def gib(value_bytes: int | float | None, digits: int = 1) -> str:
    return NA if value_bytes is None else f"{value_bytes / _GIB:.{digits}f}"


def rate(value_bytes_s: float | None) -> str:
    """A byte rate in 5 characters or fewer: 950K, 12.3M, 1.2G."""
    if value_bytes_s is None:
        return NA
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value_bytes_s >= scale:
            scaled = value_bytes_s / scale
            return f"{scaled:.1f}{unit}" if scaled < 100 else f"{scaled:.0f}{unit}"
    return f"{value_bytes_s:.0f}B"


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
