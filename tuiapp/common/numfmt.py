"""Numbers as text, one convention for every sink: a figure that is unknown is "n/a", never 0.

Units (docs/dashboard.md "Units"): memory in GiB (2**30 bytes), rates in decimal GB/s, MB/s, kB/s.
"""

from __future__ import annotations

from typing import Any

NA = "n/a"
GIB = 2**30


def num(value: Any, spec: str = ".2f", unit: str = "") -> str:
    """``value`` formatted with ``spec`` plus ``unit``; n/a for None or anything not a number
    (a report also reads figures back from recordings, where a field may hold anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NA
    return format(value, spec) + unit


def gib(value_bytes: Any, digits: int = 1) -> str:
    """Bytes as GiB without the unit (tables name it once), or n/a."""
    if isinstance(value_bytes, bool) or not isinstance(value_bytes, (int, float)):
        return NA
    return f"{value_bytes / GIB:.{digits}f}"


def mem(value_bytes: Any) -> str:
    """Memory in binary units, as CUDA and SGLang print it: 25.9 MiB, 1.2 GiB."""
    if isinstance(value_bytes, bool) or not isinstance(value_bytes, (int, float)):
        return NA
    for unit, scale in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(value_bytes) >= scale:
            return f"{value_bytes / scale:.1f} {unit}"
    return f"{value_bytes:.0f} B"


def rate(value_bytes_s: Any, *, compact: bool = False) -> str:
    """A byte rate in decimal units, as PCIe is specified: ``12.3 MB/s``; ``compact`` for
    table cells of 5 characters or fewer (``950k``, ``12.3M``, ``1.2G``, B/s implied)."""
    if isinstance(value_bytes_s, bool) or not isinstance(value_bytes_s, (int, float)):
        return NA
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value_bytes_s) >= 0.9995 * scale:  # 999.8k rounds up to 1.0M, never 1000k
            scaled = value_bytes_s / scale
            if not compact:
                return f"{scaled:.1f} {unit}B/s"
            return f"{scaled:.1f}{unit}" if scaled < 99.95 else f"{scaled:.0f}{unit}"
    return f"{value_bytes_s:.0f}B" if compact else f"{value_bytes_s:.0f} B/s"
