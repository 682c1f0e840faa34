"""The PCIe counters' read cadence: strict under traffic, slow while quiet, never silently
wrong beyond the ~1% bet the quiet cadence makes (a fake pynvml on a fake clock)."""

from __future__ import annotations

import random

import pytest
from test_telemetry_fakes import FakeNvml, fake_gpus

from tuiapp.events import GpuSample
from tuiapp.telemetry.counters import CALM_S, Cadence, WrapCounter
from tuiapp.telemetry.nvml_backend import NvmlBackend


def run(nv: FakeNvml, b: NvmlBackend, seconds: float, *, changes=(), tick_s: float = 1.0):
    """Advance the fake clock as the sampler's threads would: poll() again after the delay
    it returns, sample() every ``tick_s``; ``changes`` are (time offset, callable) applied
    on the way. Returns [(t_start, t_end, GpuSample of GPU 0)] per tick."""
    start = nv.now
    end = start + seconds
    pending = sorted(((start + dt, fn) for dt, fn in changes), key=lambda x: x[0])
    next_poll, next_tick = start, start + tick_s
    b.sample()  # anchors the first interval at ``start`` (each sample averages since the last)
    last_tick = start
    out = []
    while True:
        t = min(next_poll, next_tick, pending[0][0] if pending else end, end)
        nv.now = t
        if pending and t >= pending[0][0]:
            pending.pop(0)[1]()
            continue
        if t >= end:
            return out
        if t >= next_tick:
            (s,) = [e for e in b.sample() if isinstance(e, GpuSample)]
            out.append((last_tick, t, s))
            last_tick, next_tick = t, t + tick_s
        else:
            next_poll = t + b.poll()


def reads(gpu) -> int:
    return gpu.calls.get("fields", 0)


def test_a_quiet_gpu_is_read_a_few_times_a_second_and_shows_exact_zero():
    gpus = fake_gpus(1)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now)
    run(nv, b, CALM_S + 2)
    before = reads(gpus[0])
    samples = run(nv, b, 10)
    per_s = (reads(gpus[0]) - before) / 10
    assert 3.3 <= per_s <= 6.0  # 4 quiet polls + 1 sample read a second
    assert b.gpus[0].cadence.quiet
    assert all(s.pcie_rx_bytes_s == 0.0 and s.pcie_tx_bytes_s == 0.0 for _, _, s in samples)
    assert "0.2-0.3 s while a GPU is quiet" in b.describe()


def test_fixed_poll_reads_at_the_strict_period_always():
    gpus = fake_gpus(1)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now, pcie_poll="fixed")
    run(nv, b, CALM_S + 2)
    before = reads(gpus[0])
    run(nv, b, 10)
    assert (reads(gpus[0]) - before) / 10 >= 1 / b.poll_period_s
    assert not b.gpus[0].cadence.quiet
    with pytest.raises(ValueError):
        NvmlBackend(nv, pcie_poll="sometimes")


def test_traffic_after_a_quiet_spell_gives_na_for_that_second_then_exact_rates():
    gpus = fake_gpus(1)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now)
    run(nv, b, CALM_S + 2)
    assert b.gpus[0].cadence.quiet
    samples = run(nv, b, 6, changes=[(1.37, lambda: nv.set_rates(gpus[0], rx_bytes_s=59e9,
                                                                    tx_bytes_s=5.1e9))])
    assert samples[0][2].pcie_rx_bytes_s == 0.0  # before the onset
    assert samples[1][2].pcie_rx_bytes_s is None  # a wrap may hide in the quiet read
    assert not b.gpus[0].cadence.quiet  # switched back to wrap-safe reads at once
    for _, _, s in samples[2:]:
        assert s.pcie_rx_bytes_s == pytest.approx(59e9, rel=1e-6)
        assert s.pcie_tx_bytes_s == pytest.approx(5.1e9, rel=1e-6)


def test_a_trickle_goes_quiet_with_a_band_fitted_to_it_and_stays_exact():
    gpus = fake_gpus(1, rx_bytes_s=2e6, tx_bytes_s=0.5e6)  # idle-like background traffic
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now)
    run(nv, b, CALM_S + 2)
    cadence = b.gpus[0].cadence
    assert cadence.quiet
    assert cadence.trust_bytes == pytest.approx(4 * 2e6 * 0.3, rel=0.01)  # 4x a quiet read's worth
    for _, _, s in run(nv, b, 5):
        assert s.pcie_rx_bytes_s == pytest.approx(2e6, rel=1e-6)
        assert s.pcie_tx_bytes_s == pytest.approx(0.5e6, rel=1e-6)


def test_tens_of_mb_per_second_is_not_quiet():
    gpus = fake_gpus(1, rx_bytes_s=20e6)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now)
    samples = run(nv, b, CALM_S + 3)
    assert not b.gpus[0].cadence.quiet
    assert samples[-1][2].pcie_rx_bytes_s == pytest.approx(20e6, rel=1e-6)


def test_steady_traffic_keeps_the_strict_period():
    gpus = fake_gpus(1, rx_bytes_s=1e9)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv, clock=lambda: nv.now)
    samples = run(nv, b, 8)
    assert not b.gpus[0].cadence.quiet
    for _, _, s in samples[1:]:
        assert s.pcie_rx_bytes_s == pytest.approx(1e9, rel=1e-6)


def test_random_bursts_after_quiet_are_na_or_exact_but_almost_never_wrong():
    """Bursts fast enough to wrap the counter within one quiet read, starting at random
    times, half of them stopping again within a read or so: every second shows the exact
    rate or n/a, except when a burst's residue lands in the 1 MiB trust band (~0.03%)."""
    rng = random.Random(7)
    trials, wrong, na = 300, 0, 0
    for _ in range(trials):
        gpus = fake_gpus(1)
        nv = FakeNvml(gpus)
        b = NvmlBackend(nv, clock=lambda nv=nv: nv.now)
        run(nv, b, CALM_S + 1)
        t_on = rng.uniform(0.0, 1.0)
        steps = [(t_on, rng.uniform(17e9, 63e9))]  # (offset s, rx bytes/s from then on)
        if rng.random() < 0.5:
            steps.append((t_on + rng.uniform(0.1, 0.3), 0.0))
        t_base = nv.now
        changes = [(dt, lambda nv=nv, g=gpus[0], r=r: nv.set_rates(g, rx_bytes_s=r)) for dt, r in steps]
        bad = False
        for t0, t1, s in run(nv, b, 3, changes=changes):
            if s.pcie_rx_bytes_s is None:
                na += 1
                continue
            want = _average(steps, t0 - t_base, t1 - t_base)
            # (epoch-sized float clock: ~1e-7 s of rounding, so not 1e-6 here)
            bad |= abs(s.pcie_rx_bytes_s - want) > 1e-4 * want + 1.0
        wrong += bad
    assert wrong <= 0.01 * trials, f"{wrong} of {trials} bursts were misreported"
    assert na >= 0.9 * trials  # nearly every burst made its second n/a rather than wrong


def _average(steps: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Mean of a piecewise-constant rate (0 before the first step) over [t0, t1]."""
    edges = sorted({t0, t1, *(t for t, _ in steps if t0 < t < t1)})

    def rate_at(t: float) -> float:
        return next((r for ts, r in reversed(steps) if t >= ts), 0.0)

    return sum(rate_at(a) * (b - a) for a, b in zip(edges, edges[1:], strict=False)) / (t1 - t0)


def test_trust_band_bounds_and_the_counter_trusts_only_short_quiet_gaps():
    idle = Cadence(0.05)
    t = 0.0
    while not idle.quiet:
        t += 0.05
        idle.observe([0, 0], 0.05, t)
    assert idle.trust_bytes == 1 << 20  # the floor
    busy_ish = Cadence(0.05)
    t = 0.0
    while not busy_ish.quiet:
        t += 0.05
        busy_ish.observe([350_000, 0], 0.05, t)  # 7 MB/s: just calm enough
    assert busy_ish.trust_bytes == 4 * 7_000_000 * 0.3  # under 0.2% of the 32-bit range
    c = WrapCounter(bits=32, max_gap_s=0.06)
    c.update(0, 0.0)
    c.update(1_000_000, 0.25, trust_bytes=idle.trust_bytes)
    assert c.gaps == 0  # 1 MB in a quiet read: trusted
    c.update(3_000_000, 0.5, trust_bytes=idle.trust_bytes)
    assert c.gaps == 1  # 2 MB: over the band, may hide a wrap
    c.update(3_000_000, 1.5, trust_bytes=idle.trust_bytes)
    assert c.gaps == 2  # a 1 s gap (stalled thread) is never trusted
