"""Unwrapping hardware byte counters and turning them into interval averages.

NVML's PCIe byte counters (fields 197/198) are 32-bit: at 59 GB/s they wrap every ~72 ms
(docs: gpu-telemetry.md). A modular delta is exact only when at most one wrap happened
between two reads, so the counter must be read more often than the wrap time of the
fastest traffic the link can carry; a longer gap is recorded so that interval's rate is
reported as unknown rather than silently low.

On an H200 one read costs ~0.9 ms of CPU in the driver (it spins on a GSP call), so reading
every ~60 ms costs ~1.5% of a core per GPU even when nothing moves. :class:`Cadence` reads
a quiet GPU every 0.2-0.3 s instead and trusts such a long gap only when both counters
moved by less than 1% of their range: traffic that could have wrapped the counter leaves a
residue below that with a chance of about 1%, and anything above it marks the interval
unknown and switches back to the wrap-safe period at once.
"""

from __future__ import annotations

import random
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

STRICT_WRAP_FRACTION = 0.85  # read within 85% of the top-speed wrap time: ~10 ms of slack for a late thread
QUIET_PERIOD_S = (0.2, 0.3)  # jittered, so steady traffic cannot alias to a near-zero residue
QUIET_TRUST_FRACTION = 0.01  # a quiet read is trusted only if it moved < 1% of the range
QUIET_TRUST_MAX_GAP_S = 0.6  # a stalled thread's longer gap is never trusted
CALM_S = 2.0  # this long under a quarter of the quiet threshold before going quiet


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

    def update(self, raw: int, t_s: float, trust_bytes: int | None = None) -> int | None:
        """Take a reading; returns the bytes since the previous one (None for the first).

        ``trust_bytes``: a gap longer than ``max_gap_s`` still counts as exact when the
        counter moved by at most this much (the quiet cadence's bet, see :class:`Cadence`)."""
        delta = None
        if self.raw is not None and self.t_s is not None:
            delta = (raw - self.raw) % (1 << self.bits)
            gap_s = t_s - self.t_s
            trusted = (trust_bytes is not None and delta <= trust_bytes
                       and gap_s <= QUIET_TRUST_MAX_GAP_S)
            if gap_s > self.max_gap_s and not trusted:
                self.gaps += 1
            self.total += delta
        self.raw = raw
        self.t_s = t_s
        return delta

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


class Cadence:
    """How often one GPU's counters are read.

    Busy (the start, and whenever traffic is seen): every ``strict_s``, under one wrap at
    the link's top speed, so no wrap can hide. Quiet (after ``CALM_S`` of reads that each
    moved under a quarter of the quiet threshold's rate): every 0.2-0.3 s, each read
    trusted only if both counters moved by at most ``trust_bytes`` (1% of their range);
    one that moved more ends the quiet spell and its interval is reported unknown (the
    counter's :meth:`WrapCounter.update` sees the same threshold).

    The one case this cannot catch: traffic that starts and stops within one quiet read
    and moves a whole multiple of the range within ``trust_bytes`` (4 GiB +- 43 MB for a
    32-bit counter). ``adaptive=False`` reads every ``strict_s`` always.
    """

    def __init__(self, strict_s: float, bits: int = 32, *, adaptive: bool = True,
                 seed: int = 0) -> None:
        self.strict_s = strict_s
        self.adaptive = adaptive
        self.trust_bytes = int((1 << bits) * QUIET_TRUST_FRACTION)
        self.quiet = False
        self.calm_since_s: float | None = None
        self._rng = random.Random(seed)

    def trusted_bytes(self) -> int | None:
        return self.trust_bytes if self.quiet else None

    def period_s(self) -> float:
        return self._rng.uniform(*QUIET_PERIOD_S) if self.quiet else self.strict_s

    def observe(self, deltas: list[int | None], gap_s: float, t_s: float) -> None:
        """Update the mode after a read that moved the counters by ``deltas`` in ``gap_s``."""
        moved = max((d for d in deltas if d is not None), default=None)
        if not self.adaptive or moved is None:
            return
        if self.quiet:
            if moved > self.trust_bytes:
                self.quiet = False
                self.calm_since_s = None
            return
        calm_bytes_s = self.trust_bytes / QUIET_PERIOD_S[1] / 4
        if gap_s > 0 and moved <= calm_bytes_s * gap_s:
            if self.calm_since_s is None:
                self.calm_since_s = t_s
            elif t_s - self.calm_since_s >= CALM_S:
                self.quiet = True
        else:
            self.calm_since_s = None
