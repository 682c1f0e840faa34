"""Unwrapping hardware byte counters and turning them into interval averages.

NVML's PCIe byte counters (fields 197/198) are 32-bit: at 59 GB/s they wrap every ~72 ms
(docs: gpu-telemetry.md). A modular delta is exact only when at most one wrap happened
between two reads, so the counter must be read more often than the wrap time of the
fastest traffic the link can carry; a longer gap is recorded so that interval's rate is
reported as unknown rather than silently low.
"""

from __future__ import annotations

from dataclasses import dataclass

# PCIe generation -> (transfer rate GT/s per lane, line-code efficiency)
_PCIE_GEN = {
    1: (2.5, 8 / 10),
    2: (5.0, 8 / 10),
    3: (8.0, 128 / 130),
    4: (16.0, 128 / 130),
    5: (32.0, 128 / 130),
    6: (64.0, 1.0),  # FLIT mode; upper bound is what matters here
}
DEFAULT_LINK_BYTES_S = 64e9  # gen5 x16, used when the link is unknown


def link_max_bytes_s(gen: int | None, width: int | None) -> float:
    """Raw one-direction capacity of a PCIe link in bytes/s (an upper bound for the counters)."""
    if not gen or not width:
        return DEFAULT_LINK_BYTES_S
    gt_s, efficiency = _PCIE_GEN.get(gen, _PCIE_GEN[max(_PCIE_GEN)])
    return gt_s * 1e9 * width * efficiency / 8


def wrap_time_s(bits: int, max_bytes_s: float) -> float:
    """How long a counter of ``bits`` takes to wrap at ``max_bytes_s``."""
    return (1 << bits) / max_bytes_s


@dataclass
class WrapCounter:
    """A modular counter unwrapped into a 64-bit-safe running total.

    ``update`` takes the raw reading and its time; a gap longer than ``max_gap_s`` (one
    wrap at the link's top speed) bumps ``gaps``, which makes the enclosing interval's rate
    unknown.
    """

    bits: int = 32
    max_gap_s: float = float("inf")
    raw: int | None = None
    total: int = 0
    t_s: float | None = None
    gaps: int = 0

    def update(self, raw: int, t_s: float) -> None:
        if self.raw is not None and self.t_s is not None:
            if t_s - self.t_s > self.max_gap_s:
                self.gaps += 1
            self.total += (raw - self.raw) % (1 << self.bits)
        self.raw = raw
        self.t_s = t_s

    def mark(self) -> tuple[int, float | None, int]:
        """A point to measure the next interval from: (total, time, gaps)."""
        return self.total, self.t_s, self.gaps


def interval_rate(prev: tuple[int, float | None, int] | None,
                  now: tuple[int, float | None, int]) -> float | None:
    """Bytes/s between two marks; None when unknown (no previous mark, no time passed,
    or a read gap long enough to hide a wrap)."""
    if prev is None or prev[1] is None or now[1] is None:
        return None
    dt = now[1] - prev[1]
    if dt <= 0 or now[2] != prev[2]:
        return None
    return (now[0] - prev[0]) / dt
