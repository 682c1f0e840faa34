"""Unwrapping hardware byte counters and turning them into interval averages.

NVML's PCIe byte counters (fields 197/198) are 32-bit: at 59 GB/s they wrap every ~72 ms
(docs/pcie-method.md §3). A modular delta is exact only when at most one wrap happened
between two reads, so the counter must be read more often than the wrap time of the
fastest traffic the link can carry; a longer gap is recorded so that interval's rate is
reported as unknown rather than silently low.

On an H200 one read costs ~0.85 ms of CPU in the driver (it spins on a GSP call), so
reading every ~60 ms costs ~1.5% of a core per GPU even when nothing moves. :class:`Cadence`
reads a quiet GPU every 0.2-0.3 s instead and trusts such a long gap only when both
counters moved by less than a small band (four times the idle traffic, 1 to 9.6 MB, at
most 0.22% of the range): traffic that wrapped the counter leaves a residue in that band
with a chance of 0.02-0.22%, and anything above it marks the interval unknown and goes
back to the wrap-safe period at once.
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

# read within 85% of the top-speed wrap time: ~10 ms of slack for a late thread
STRICT_WRAP_FRACTION = 0.85
QUIET_PERIOD_S = (0.2, 0.3)  # jittered, so steady traffic cannot alias to a near-zero residue
QUIET_MAX_BYTES_S = 8e6  # a GPU moving more than this is never quiet
TRUST_FLOOR_BYTES = 1 << 20  # idle traffic is ~0.1-1 MB/s on an H200: room for its noise
QUIET_TRUST_MAX_GAP_S = 0.6  # a stalled thread's longer gap is never trusted
# this long under QUIET_MAX_BYTES_S before going quiet: short pauses between benchmark
# runs stay on the strict period, so a run's first second is not n/a
CALM_S = 5.0


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
    the link's top speed, so no wrap can hide. Quiet (after ``CALM_S`` in which no 0.3 s
    span of reads moved more than ``QUIET_MAX_BYTES_S`` allows): every 0.2-0.3 s, each
    read trusted only if both counters moved by at most ``trust_bytes``: four times the
    most a calm span moved, and at least 1 MiB (at most 9.6 MB, from
    ``QUIET_MAX_BYTES_S``). A read that moved more ends the quiet spell and its interval
    is reported unknown (the counter's :meth:`WrapCounter.update` sees the same band).

    The one case this cannot catch: traffic that starts within one quiet read and has
    moved a whole multiple of the range (4 GiB for a 32-bit counter) plus at most
    ``trust_bytes`` by the end of it. ``adaptive=False`` reads every ``strict_s`` always.
    """

    def __init__(self, strict_s: float, *, adaptive: bool = True, seed: int = 0) -> None:
        self.strict_s = strict_s
        self.adaptive = adaptive
        self.trust_bytes = TRUST_FLOOR_BYTES
        self.quiet = False
        self.calm_since_s: float | None = None
        self.calm_peak_bytes = 0.0  # most a calm span moved, scaled to a quiet read's length
        self._span_bytes, self._span_s = 0, 0.0  # reads since the last span was judged
        self._rng = random.Random(seed)

    def trusted_bytes(self) -> int | None:
        return self.trust_bytes if self.quiet else None

    def period_s(self) -> float:
        return self._rng.uniform(*QUIET_PERIOD_S) if self.quiet else self.strict_s

    def observe(self, deltas: list[int | None], gap_s: float, t_s: float) -> None:
        """Update the mode after a read that moved the counters by ``deltas`` in ``gap_s``."""
        moved = max((d for d in deltas if d is not None), default=None)
        if not self.adaptive or moved is None or gap_s <= 0:
            return
        if self.quiet:
            if moved > self.trust_bytes:
                self.quiet = False
                self.calm_since_s = None
                self._span_bytes, self._span_s = 0, 0.0
            return
        # judge calm over spans as long as a quiet read: idle traffic comes in short spurts
        # (GSP messages), so one 58 ms read scaled up would overstate it several times
        self._span_bytes += moved
        self._span_s += gap_s
        if self._span_s < QUIET_PERIOD_S[1]:
            return
        as_quiet_read = self._span_bytes * QUIET_PERIOD_S[1] / self._span_s
        self._span_bytes, self._span_s = 0, 0.0
        if as_quiet_read > QUIET_MAX_BYTES_S * QUIET_PERIOD_S[1]:
            self.calm_since_s = None
            return
        if self.calm_since_s is None:
            self.calm_since_s, self.calm_peak_bytes = t_s, 0.0
        self.calm_peak_bytes = max(self.calm_peak_bytes, as_quiet_read)
        if t_s - self.calm_since_s >= CALM_S:
            self.quiet = True
            self.trust_bytes = int(max(4 * self.calm_peak_bytes, TRUST_FLOOR_BYTES))
