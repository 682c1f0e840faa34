"""A fake pynvml module for the telemetry tests (no tests here; imported by the others).

It behaves like nvidia-ml-py where the backend looks: NVMLError with ``.value`` codes,
field values with ``valueType``/``nvmlReturn``/``timestamp``, 32-bit PCIe byte counters
driven by a clock the test controls, and per-GPU switches for NOT_SUPPORTED, GPU lost,
hung calls and Xid events.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


class FakeNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    mem_total: int = 150_000_000_000
    mem_used: int = 0
    mem_reserved: int = 645_000_000
    tx_bytes_s: float = 0.0
    rx_bytes_s: float = 0.0
    counters: bool = True  # fields 197/198 supported
    unsupported: set[str] = field(default_factory=set)  # function names -> NOT_SUPPORTED
    lost: bool = False
    hang: threading.Event | None = None  # utilization call blocks until set
    calls: dict[str, int] = field(default_factory=dict)
    nvlink_links: int = 0
    base_bytes: dict[str, tuple[float, float]] = field(default_factory=dict)  # set_rates()


class FakeNvml(SimpleNamespace):
    """Use as ``sys.modules['pynvml']`` or pass to NvmlBackend directly."""

    NVMLError = FakeNVMLError
    nvmlMemory_v2 = 0x02000028
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1

    def __init__(self, gpus: list[FakeGpu], *, init_error: int | None = None,
                 real_time: bool = False) -> None:
        super().__init__()
        self.gpus = gpus
        self.init_error = init_error
        self.t0 = time.time()
        self._now = self.t0  # the fake clock: tests advance it (or it follows time.time())
        self.real_time = real_time
        self.events: list[tuple[int, int]] = []  # (gpu index, xid) waiting to be delivered
        self.barrier: threading.Barrier | None = None  # PcieThroughput waits on it
        self.shutdown_called = False

    @property
    def now(self) -> float:
        return time.time() if self.real_time else self._now

    @now.setter
    def now(self, value: float) -> None:
        self._now = value

    # -- helpers
    def _gpu(self, handle: Any, fn: str) -> FakeGpu:
        g = self.gpus[handle]
        g.calls[fn] = g.calls.get(fn, 0) + 1
        if g.lost:
            raise FakeNVMLError(15)
        if fn in g.unsupported:
            raise FakeNVMLError(3)
        return g

    def set_rates(self, g: FakeGpu, *, tx_bytes_s: float | None = None,
                  rx_bytes_s: float | None = None) -> None:
        """Change a GPU's traffic from now on (the counters keep what they counted)."""
        for direction, rate in (("tx", tx_bytes_s), ("rx", rx_bytes_s)):
            if rate is None:
                continue
            base = self.bytes_so_far(g, direction)
            g.base_bytes[direction] = (base, self.now)
            setattr(g, f"{direction}_bytes_s", rate)

    def bytes_so_far(self, g: FakeGpu, direction: str) -> float:
        base, since = g.base_bytes.get(direction, (0.0, self.t0))
        return base + getattr(g, f"{direction}_bytes_s") * (self.now - since)

    def counter(self, g: FakeGpu, direction: str) -> int:
        return int(self.bytes_so_far(g, direction)) % (1 << 32)

    # -- init / system
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if self.gpus[i].lost:
            raise FakeNVMLError(15)
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._gpu(h, "uuid").uuid

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._gpu(h, "name").name

    # -- metrics
    def nvmlDeviceGetMemoryInfo(self, h: int, version: int | None = None) -> Any:
        g = self._gpu(h, "memory_v2" if version else "memory_v1")
        if version:
            return SimpleNamespace(total=g.mem_total, reserved=g.mem_reserved,
                                   free=g.mem_total - g.mem_used - g.mem_reserved, used=g.mem_used)
        return SimpleNamespace(total=g.mem_total, free=g.mem_total - g.mem_used - g.mem_reserved,
                               used=g.mem_used + g.mem_reserved)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        g = self._gpu(h, "util")
        if g.hang is not None:
            g.hang.wait()
        return SimpleNamespace(gpu=42, memory=10)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._gpu(h, "power") and 123_456

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._gpu(h, "power_limit") and 600_000

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return self._gpu(h, "temp") and 41

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return self._gpu(h, "clock") and 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self._gpu(h, "clock_events") and 0x1

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return self._gpu(h, "gen") and 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return self._gpu(h, "width") and 16

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return self._gpu(h, "gen_max") and 5

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return self._gpu(h, "width_max") and 16

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:
        self._gpu(h, "replay")
        return 0

    def nvmlDeviceGetFieldValues(self, h: int, ids: list[Any]) -> list[Any]:
        g = self._gpu(h, "fields")
        out = []
        for fid in ids:
            fid, scope = fid if isinstance(fid, tuple) else (fid, 0)
            ret, vtype, value = 3, 1, SimpleNamespace(uiVal=0, ullVal=0)
            if fid in (197, 198) and g.counters:
                ret, value = 0, SimpleNamespace(uiVal=self.counter(g, "tx" if fid == 197 else "rx"))
            elif fid == 91:
                ret, value = 0, SimpleNamespace(uiVal=g.nvlink_links)
            elif fid in (138, 139) and scope < g.nvlink_links:
                kib = int((g.tx_bytes_s if fid == 138 else g.rx_bytes_s) * (self.now - self.t0) / 1024)
                ret, vtype, value = 0, 3, SimpleNamespace(ullVal=kib)
            out.append(SimpleNamespace(fieldId=fid, scopeId=scope, timestamp=int(self.now * 1e6),
                                       latencyUsec=0, valueType=vtype, nvmlReturn=ret, value=value))
        return out

    def nvmlDeviceGetPcieThroughput(self, h: int, counter: int) -> int:
        g = self._gpu(h, "pcie_throughput")
        if self.barrier is not None:
            self.barrier.wait()  # only passes when all calls are in flight at once
        return int((g.tx_bytes_s if counter == 0 else g.rx_bytes_s) / 1000)

    # -- events
    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceGetSupportedEventTypes(self, h: int) -> int:
        return 0xFFFF

    def nvmlDeviceRegisterEvents(self, h: int, mask: int, es: str) -> None:
        self._gpu(h, "register_events")

    def nvmlEventSetWait_v2(self, es: str, timeout_ms: int) -> Any:
        if self.events:
            index, xid = self.events.pop(0)
            return SimpleNamespace(device=index, eventType=0x8, eventData=xid)
        time.sleep(min(timeout_ms, 20) / 1000)
        raise FakeNVMLError(10)

    def nvmlEventSetFree(self, es: str) -> None:
        pass


def fake_gpus(n: int, **kw: Any) -> list[FakeGpu]:
    return [FakeGpu(uuid=f"GPU-fake-{i}", **kw) for i in range(n)]
