"""NVML backend and sampler against a fake pynvml (tests/test_telemetry_fakes.py)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest
from test_telemetry_fakes import FakeNvml, fake_gpus

from tuiapp.events import Alert, GpuSample, Note
from tuiapp.telemetry import open_backend, run_gpu_sampler, take_snapshot
from tuiapp.telemetry.counters import (
    DEFAULT_LINK_BYTES_S,
    WrapCounter,
    interval_rate,
    link_max_bytes_s,
    wrap_time_s,
)
from tuiapp.telemetry.nvml_backend import NvmlBackend


def gpu_samples(events):
    return [e for e in events if isinstance(e, GpuSample)]


# ------------------------------------------------------------------ counters


def test_link_capacity_and_wrap_time_gen5_x16():
    cap = link_max_bytes_s(5, 16)
    assert cap == pytest.approx(63.0e9, rel=0.01)
    # docs/pcie-method.md §3's figure: a 32-bit counter wraps every ~72 ms at 59 GB/s
    assert wrap_time_s(32, 59e9) == pytest.approx(0.0728, rel=0.01)
    assert link_max_bytes_s(None, 16) == DEFAULT_LINK_BYTES_S  # unknown link: assume gen5 x16
    assert link_max_bytes_s(6, 16) > 2 * cap * 0.95


def test_wrap_counter_unwraps_modular_deltas():
    c = WrapCounter(bits=32, max_gap_s=0.07)
    step = 3_000_000_000  # < 2**32: at most one wrap per read
    raw, t = 4_000_000_000, 100.0
    c.update(raw, t)
    first = c.mark()
    for _ in range(20):
        raw = (raw + step) % (1 << 32)
        t += 0.05
        c.update(raw, t)
    assert c.total == 20 * step
    assert interval_rate(first, c.mark()) == pytest.approx(20 * step / 1.0)


def test_gap_longer_than_a_wrap_makes_the_interval_unknown():
    c = WrapCounter(bits=32, max_gap_s=0.07)
    c.update(0, 10.0)
    a = c.mark()
    c.update(5, 10.2)  # 200 ms without a read: one or more wraps may hide in "5 bytes"
    assert c.gaps == 1
    assert interval_rate(a, c.mark()) is None
    b = c.mark()
    c.update(1005, 10.25)
    assert interval_rate(b, c.mark()) == pytest.approx(1000 / 0.05)


# ------------------------------------------------------------------ backend


def drive(nv: FakeNvml, backend: NvmlBackend, seconds: float, period_s: float) -> None:
    """Advance the fake clock, polling like the poll thread would."""
    for _ in range(round(seconds / period_s)):
        nv.now += period_s
        backend.poll()


def test_pcie_rate_is_exact_across_many_wraps():
    nv = FakeNvml(fake_gpus(2, rx_bytes_s=59e9, tx_bytes_s=5.1e9))
    b = NvmlBackend(nv, clock=lambda: nv.now)
    assert b.poll_period_s is not None and b.poll_period_s < wrap_time_s(32, 63e9)
    b.sample()
    drive(nv, b, 1.0, b.poll_period_s)
    s = gpu_samples(b.sample())
    assert len(s) == 2
    for g in s:
        assert g.pcie_method == "counters"
        # 59 GB for one second is ~13.7 wraps of the 32-bit counter
        assert g.pcie_rx_bytes_s == pytest.approx(59e9, rel=1e-6)
        assert g.pcie_tx_bytes_s == pytest.approx(5.1e9, rel=1e-6)


def test_reads_too_far_apart_give_na_not_a_wrong_rate():
    nv = FakeNvml(fake_gpus(1, rx_bytes_s=59e9))
    b = NvmlBackend(nv, clock=lambda: nv.now)
    b.sample()
    drive(nv, b, 1.0, 0.1)  # every 100 ms: a wrap can hide between reads
    (g,) = gpu_samples(b.sample())
    assert g.pcie_rx_bytes_s is None
    drive(nv, b, 1.0, b.poll_period_s)  # back to wrap-safe reads: values return
    (g,) = gpu_samples(b.sample())
    assert g.pcie_rx_bytes_s == pytest.approx(59e9, rel=1e-6)


def test_memory_v2_and_fields():
    gpus = fake_gpus(1)
    gpus[0].mem_used = 20 * 2**30
    nv = FakeNvml(gpus)
    (g,) = gpu_samples(NvmlBackend(nv).sample())
    assert g.mem_used_bytes == 20 * 2**30  # v2: used excludes the driver reserve
    assert g.mem_reserved_bytes == gpus[0].mem_reserved
    assert (g.util_pct, g.power_w, g.temp_c, g.sm_clock_mhz) == (42.0, 123.456, 41.0, 1980)
    assert (g.pcie_gen, g.pcie_width, g.pcie_gen_max, g.pcie_width_max) == (5, 16, 5, 16)


def test_memory_falls_back_to_v1_when_v2_is_missing():
    gpus = fake_gpus(1)
    gpus[0].unsupported = {"memory_v2"}
    gpus[0].mem_used = 1000
    (g,) = gpu_samples(NvmlBackend(FakeNvml(gpus)).sample())
    assert g.mem_used_bytes == 1000 + gpus[0].mem_reserved  # v1 counts the reserve as used
    assert g.mem_reserved_bytes is None


def test_not_supported_is_na_and_never_asked_again():
    gpus = fake_gpus(1)
    gpus[0].unsupported = {"power", "replay"}
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv)
    for _ in range(3):
        (g,) = gpu_samples(b.sample())
        assert g.power_w is None and g.pcie_replay_count is None
        assert g.temp_c == 41.0
    assert gpus[0].calls["power"] == 1
    assert gpus[0].calls["temp"] == 3


def test_throughput_fallback_runs_all_calls_in_parallel():
    gpus = fake_gpus(4, counters=False, rx_bytes_s=10e9, tx_bytes_s=2e9)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv)
    assert b.poll_period_s is None
    # 4 GPUs x 2 directions: the barrier only opens when all 8 calls are in flight at once
    nv.barrier = threading.Barrier(8, timeout=5)
    s = gpu_samples(b.sample())
    assert [g.pcie_method for g in s] == ["throughput"] * 4
    assert all(g.pcie_rx_bytes_s == pytest.approx(10e9) for g in s)
    assert all(g.pcie_tx_bytes_s == pytest.approx(2e9) for g in s)
    assert "nvmlDeviceGetPcieThroughput" in b.describe()


def test_lost_gpu_raises_one_alert_and_shows_na():
    gpus = fake_gpus(2)
    nv = FakeNvml(gpus)
    b = NvmlBackend(nv)
    b.sample()
    gpus[1].lost = True
    first = b.sample()
    alerts = [e for e in first if isinstance(e, Alert)]
    assert len(alerts) == 1
    assert alerts[0].alert_kind == "gpu_lost" and alerts[0].source == "nvml"
    assert "GPU 1" in alerts[0].message and "GPU-fake-1" in alerts[0].message
    g0, g1 = gpu_samples(first)
    assert g0.mem_used_bytes == 0 and g0.util_pct == 42.0
    assert g1.uuid == "GPU-fake-1" and g1.mem_used_bytes is None and g1.util_pct is None
    again = b.sample()
    assert not [e for e in again if isinstance(e, Alert)]
    assert gpu_samples(again)[1].util_pct is None


def test_nvlink_throughput_sums_links():
    nv = FakeNvml(fake_gpus(1, tx_bytes_s=100e9, rx_bytes_s=50e9, nvlink_links=4))
    b = NvmlBackend(nv)
    b.sample()
    nv.now += 1.0
    (g,) = gpu_samples(b.sample())
    # the fake puts the same per-link rate on each of its 4 links (KiB counters)
    assert g.nvlink_tx_bytes_s == pytest.approx(4 * 100e9, rel=1e-6)
    assert g.nvlink_rx_bytes_s == pytest.approx(4 * 50e9, rel=1e-6)


def test_snapshot_with_a_hung_call_returns_a_note_and_does_not_close():
    gpus = fake_gpus(1)
    gpus[0].hang = threading.Event()
    nv = FakeNvml(gpus)
    events = take_snapshot(NvmlBackend(nv), 0.05, timeout_s=0.3, close=True)
    assert [e.kind for e in events] == ["note"] and "did not answer" in events[0].text
    assert not nv.shutdown_called
    gpus[0].hang.set()


def test_gpu_lost_before_start_is_listed_and_alerted():
    gpus = fake_gpus(3)
    gpus[2].lost = True
    events = NvmlBackend(FakeNvml(gpus)).sample()
    alerts = [e for e in events if isinstance(e, Alert)]
    assert [a.alert_kind for a in alerts] == ["gpu_lost"] and "GPU 2" in alerts[0].message
    s = gpu_samples(events)
    assert [g.index for g in s] == [0, 1, 2]
    assert s[2].mem_used_bytes is None and s[1].mem_used_bytes == 0


def test_a_gpu_that_refuses_to_open_costs_only_itself():
    from test_telemetry_fakes import FakeNVMLError

    nv = FakeNvml(fake_gpus(3))
    real = nv.nvmlDeviceGetHandleByIndex
    nv.nvmlDeviceGetHandleByIndex = lambda i: (_ for _ in ()).throw(FakeNVMLError(4)) if i == 1 else real(i)
    events = NvmlBackend(nv).sample()
    notes = [e for e in events if isinstance(e, Note)]
    assert len(notes) == 1 and "GPU 1" in notes[0].text
    s = gpu_samples(events)
    assert [g.index for g in s] == [0, 1, 2]
    assert s[1].mem_used_bytes is None and s[0].mem_used_bytes == 0 and s[2].mem_used_bytes == 0


def test_xid_event_becomes_an_alert():
    nv = FakeNvml(fake_gpus(2))
    b = NvmlBackend(nv)
    assert b.has_events
    nv.events.append((1, 79))
    (alert,) = b.wait_events(0.1)
    assert alert.alert_kind == "xid" and alert.source == "nvml"
    assert alert.message == "GPU 1: Xid 79 (GPU has fallen off the bus)"
    assert b.wait_events(0.01) == []  # timeout: nothing happened


# ------------------------------------------------------------------ open_backend


def test_no_driver_turns_telemetry_off_with_one_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], init_error=12))
    assert open_backend() == (None, "telemetry off: NVML not available (no NVIDIA driver)")
    assert open_backend("nvml")[0] is None


def test_no_gpu_turns_telemetry_off(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    backend, note = open_backend()
    assert backend is None and note == "telemetry off: NVML found no NVIDIA GPU"


def test_missing_binding_turns_telemetry_off(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    backend, note = open_backend()
    assert backend is None and "nvidia-ml-py not installed" in note


def test_open_backend_with_fake_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(fake_gpus(8)))
    backend, note = open_backend()
    assert backend is not None and backend.name == "nvml"
    assert note.startswith("telemetry: NVML, 8 GPUs (NVIDIA H200)")
    with pytest.raises(ValueError):
        open_backend("bogus")


def test_pcie_poll_env_picks_the_cadence_and_a_bad_value_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(fake_gpus(1)))
    assert open_backend()[0].pcie_poll == "adaptive"
    monkeypatch.setenv("TUIAPP_PCIE_POLL", "fixed")
    backend, note = open_backend()
    assert backend.pcie_poll == "fixed" and "while a GPU is quiet" not in note
    monkeypatch.setenv("TUIAPP_PCIE_POLL", "often")
    assert open_backend() == (None, "telemetry off: TUIAPP_PCIE_POLL must be 'adaptive' or "
                                    "'fixed', not 'often'")


# ------------------------------------------------------------------ sampler


async def test_sampler_publishes_each_gpu_each_interval_then_stops():
    nv = FakeNvml(fake_gpus(3))
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, NvmlBackend(nv), interval_s=0.1,
                                               stop=stop))
    await asyncio.sleep(0.65)
    stop.set()
    await asyncio.wait_for(task, 2)
    s = gpu_samples(events)
    assert not [e for e in events if isinstance(e, Note)]  # open_backend's note says it all
    for i in range(3):
        assert len([g for g in s if g.index == i]) >= 3
    await asyncio.sleep(0.3)
    assert nv.shutdown_called  # closed once its threads were out of their calls


async def test_hung_nvml_call_never_freezes_the_loop():
    gpus = fake_gpus(1)
    release = threading.Event()
    gpus[0].hang = release
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, NvmlBackend(FakeNvml(gpus)),
                                               interval_s=0.1, stop=stop, hang_timeout_s=0.3))
    ticks = 0
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:  # the event loop keeps running while NVML hangs
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks > 20
    notes = [e.text for e in events if isinstance(e, Note)]
    assert any("stalled" in n for n in notes), notes
    assert not gpu_samples(events)
    release.set()
    await asyncio.sleep(0.8)
    assert gpu_samples(events)
    assert any("resumed" in e.text for e in events if isinstance(e, Note))
    stop.set()
    await asyncio.wait_for(task, 2)


async def test_stop_returns_promptly_even_with_a_call_still_hung():
    gpus = fake_gpus(1)
    gpus[0].hang = threading.Event()  # never released during the test
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(lambda e: None, NvmlBackend(FakeNvml(gpus)),
                                               interval_s=0.1, stop=stop))
    await asyncio.sleep(0.2)
    stop.set()
    await asyncio.wait_for(task, 30)  # a guard against a hang, not a bound on the time taken
    assert not gpus[0].hang.is_set()  # ended while the call is still hung: it did not wait for it
    gpus[0].hang.set()


async def test_xid_alert_is_published_by_the_sampler():
    nv = FakeNvml(fake_gpus(2))
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, NvmlBackend(nv), interval_s=0.1,
                                               stop=stop))
    nv.events.append((0, 48))
    await asyncio.sleep(0.4)
    stop.set()
    await asyncio.wait_for(task, 2)
    xids = [e for e in events if isinstance(e, Alert) and e.alert_kind == "xid"]
    assert [a.message for a in xids] == ["GPU 0: Xid 48 (double-bit ECC error)"]
