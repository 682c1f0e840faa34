"""GPU telemetry from NVML through nvidia-ml-py.

pynvml is imported in one place (:func:`load_pynvml`) and the backend takes the module as
a parameter, so tests substitute a fake. Each metric is probed per GPU and never asked
again once NVML says NOT_SUPPORTED (shown as n/a). A GPU that reports GPU_IS_LOST is
alerted once and then only shows n/a.

PCIe: the 32-bit byte counters (fields 197/198) are read by :meth:`NvmlBackend.poll`
every ``poll_period_s`` (under one wrap at the link's top speed) while there is traffic,
and every 0.2-0.3 s while a GPU is quiet (``counters.Cadence``: a read costs ~0.9 ms of
driver CPU on an H200), and unwrapped, so each sample is the exact average over the
display interval. GPUs without the counters fall back to ``nvmlDeviceGetPcieThroughput``
(a blocking 20 ms snapshot), all GPUs and both directions at once in parallel threads.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tuiapp.events import Alert, GpuSample, Note, _Event
from tuiapp.telemetry.backend import Backend, call_in_threads
from tuiapp.telemetry.counters import (
    STRICT_WRAP_FRACTION,
    Cadence,
    WrapCounter,
    interval_rate,
    link_max_bytes_s,
    wrap_time_s,
)

FI_PCIE_TX_BYTES = 197  # NVML_FI_DEV_PCIE_COUNT_TX_BYTES
FI_PCIE_RX_BYTES = 198  # NVML_FI_DEV_PCIE_COUNT_RX_BYTES
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_DATA_TX_KIB = 138  # cumulative KiB, scopeId = link
FI_NVLINK_DATA_RX_KIB = 139

ERR_INVALID_ARGUMENT = 2
ERR_NOT_SUPPORTED = 3
ERR_NO_PERMISSION = 4
ERR_TIMEOUT = 10
ERR_FUNCTION_NOT_FOUND = 13
UNSUPPORTED_CODES = {ERR_INVALID_ARGUMENT, ERR_NOT_SUPPORTED, ERR_NO_PERMISSION, ERR_FUNCTION_NOT_FOUND}
LOST_CODES = {15: "GPU is lost (fallen off the bus?)", 16: "GPU needs a reset", 28: "GPU not found"}
EVENT_XID = 0x8  # nvmlEventTypeXidCriticalError

# A few Xids worth naming (NVIDIA's Xid catalog); others print as their number.
XID_MEANING = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup", 48: "double-bit ECC error", 63: "ECC page retirement / row remap",
    64: "row remap failure", 74: "NVLink error", 79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate", 94: "contained ECC error", 95: "uncontained ECC error",
    109: "context switch timeout", 119: "GSP RPC timeout", 120: "GSP error",
}
XID_WARNING_ONLY = {45, 63}


def load_pynvml() -> Any:
    """The one import of pynvml (tests put a fake into sys.modules)."""
    import pynvml

    return pynvml


def nvml_error_code(exc: BaseException) -> int | None:
    return getattr(exc, "value", None)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


# nvmlValueType_t -> (union member, bit width); anything else is a double
_FIELD_TYPES = {1: ("uiVal", 32), 2: ("ulVal", 64), 3: ("ullVal", 64), 4: ("sllVal", 64),
                5: ("siVal", 32), 6: ("usVal", 16)}


def field_int(fv: Any) -> tuple[int | float, int]:
    """(value, bit width) of one nvmlFieldValue_t, by its valueType."""
    member, bits = _FIELD_TYPES.get(fv.valueType, ("dVal", 64))
    return getattr(fv.value, member), bits


def field_time_s(fv: Any) -> float:
    """The field's own timestamp (µs since the epoch), or now when it looks unusable."""
    now = time.time()
    ts = getattr(fv, "timestamp", 0) / 1e6
    return ts if abs(ts - now) < 60 else now


class _GpuLost(Exception):
    pass


@dataclass
class _Gpu:
    index: int
    handle: Any
    uuid: str | None = None
    name: str | None = None
    gen_max: int | None = None
    width_max: int | None = None
    pcie: str | None = None  # "counters" | "throughput" | None
    tx: WrapCounter = field(default_factory=WrapCounter)
    rx: WrapCounter = field(default_factory=WrapCounter)
    cadence: Cadence | None = None
    next_read_s: float = 0.0  # clock time the poll thread reads this GPU's counters next
    prev_marks: Any = None
    nvlink_links: list[int] = field(default_factory=list)
    nvlink_prev: tuple[float, float, float] | None = None
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False


class NvmlBackend(Backend):
    name = "nvml"

    def __init__(self, nv: Any, *, pcie_method: str = "auto",
                 poll_period_s: float | None = None, pcie_poll: str = "adaptive",
                 clock: Any = time.monotonic) -> None:
        """Initialise NVML (raises the module's NVMLError when it cannot) and probe GPUs.

        ``pcie_method``: "auto" (counters where supported, else throughput), "counters"
        or "throughput" (forces that method, for comparisons).
        ``pcie_poll``: "adaptive" (slower reads while a GPU is quiet) or "fixed" (every
        ``poll_period_s`` always). ``clock``: seconds, for scheduling the reads (tests pass
        their fake clock).
        """
        if pcie_poll not in ("adaptive", "fixed"):
            raise ValueError(f"pcie_poll must be 'adaptive' or 'fixed', not {pcie_poll!r}")
        self.nv = nv
        self.pcie_poll = pcie_poll
        self._clock = clock
        self.counter_reads = 0  # PCIe counter reads so far, for the cost benchmarks
        nv.nvmlInit()
        self._lock = threading.Lock()  # poll() vs sample(): one counter reader at a time
        self._pending: deque[_Event] = deque()
        self._es: Any = None
        self.driver_version = self._static(lambda: _text(nv.nvmlSystemGetDriverVersion()))
        self.gpus = [self._open_gpu(i, pcie_method) for i in range(nv.nvmlDeviceGetCount())]
        counted = [g for g in self.gpus if g.pcie == "counters"]
        if counted:
            shortest_wrap_s = min(g.tx.max_gap_s for g in counted)
            self.poll_period_s = poll_period_s or STRICT_WRAP_FRACTION * shortest_wrap_s
            for g in counted:
                g.cadence = Cadence(self.poll_period_s, adaptive=pcie_poll == "adaptive",
                                    seed=g.index)
        self._setup_events()

    # ------------------------------------------------------------------ setup

    def _static(self, fn: Any) -> Any:
        try:
            return fn()
        except (self.nv.NVMLError, AttributeError, TypeError):
            return None

    def _open_gpu(self, index: int, pcie_method: str) -> _Gpu:
        nv = self.nv
        try:
            h = nv.nvmlDeviceGetHandleByIndex(index)
        except nv.NVMLError as exc:
            g = _Gpu(index=index, handle=None)
            try:
                self._on_error(g, "handle", exc)
            except _GpuLost:
                return g  # listed, alerted once, n/a from the first sample
            # Any other refusal (no permission, ...) costs this GPU, not the others.
            g.lost = True
            self._pending.append(Note(level="warning", source="nvml",
                                      text=f"GPU {index}: cannot open it ({exc}); shown as n/a"))
            return g
        g = _Gpu(index=index, handle=h)
        g.uuid = self._static(lambda: _text(nv.nvmlDeviceGetUUID(h)))
        g.name = self._static(lambda: _text(nv.nvmlDeviceGetName(h)))
        g.gen_max = self._static(lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h))
        g.width_max = self._static(lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h))
        if pcie_method in ("auto", "counters"):
            try:
                fvs = nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES])
                if fvs[0].nvmlReturn == 0 and fvs[1].nvmlReturn == 0:
                    bits = field_int(fvs[0])[1]
                    gap_s = wrap_time_s(bits, link_max_bytes_s(g.gen_max, g.width_max))
                    g.tx = WrapCounter(bits=bits, max_gap_s=gap_s)
                    g.rx = WrapCounter(bits=field_int(fvs[1])[1], max_gap_s=gap_s)
                    g.pcie = "counters"
                    self._update_counters(g, fvs)
            except (nv.NVMLError, AttributeError):
                pass
        if g.pcie is None and pcie_method in ("auto", "throughput"):
            if hasattr(nv, "nvmlDeviceGetPcieThroughput"):
                g.pcie = "throughput"  # probed by use: NOT_SUPPORTED turns it off
        try:
            fv = nv.nvmlDeviceGetFieldValues(h, [FI_NVLINK_LINK_COUNT])[0]
            n_links = int(field_int(fv)[0]) if fv.nvmlReturn == 0 else 0
            if n_links > 0:
                ids = [(f, link) for link in range(n_links)
                       for f in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB)]
                fvs = nv.nvmlDeviceGetFieldValues(h, ids)
                g.nvlink_links = sorted({fvs[i].scopeId for i in range(len(ids))
                                         if fvs[i].nvmlReturn == 0})
        except (nv.NVMLError, AttributeError, TypeError):
            pass
        return g

    def _setup_events(self) -> None:
        nv = self.nv
        try:
            es = nv.nvmlEventSetCreate()
        except (nv.NVMLError, AttributeError):
            return
        registered = 0
        for g in self.gpus:
            if g.lost:
                continue
            try:
                want = EVENT_XID & nv.nvmlDeviceGetSupportedEventTypes(g.handle)
                if want:
                    nv.nvmlDeviceRegisterEvents(g.handle, want, es)
                    registered += 1
            except (nv.NVMLError, AttributeError):
                continue
        if registered:
            self._es = es
            self.has_events = True
        else:
            self._static(lambda: nv.nvmlEventSetFree(es))

    def describe(self) -> str:
        n = len(self.gpus)
        names = sorted({g.name or "?" for g in self.gpus})
        methods = {g.pcie for g in self.gpus}
        if methods == {"counters"}:
            pcie = f"PCIe from 32-bit byte counters read every {self.poll_period_s * 1e3:.0f} ms"
            if self.pcie_poll == "adaptive":
                pcie += " (0.2-0.3 s while a GPU is quiet)"
        elif methods == {"throughput"}:
            pcie = "PCIe from nvmlDeviceGetPcieThroughput (20 ms snapshots)"
        elif methods == {None}:
            pcie = "PCIe n/a"
        else:
            pcie = "PCIe: " + ", ".join(f"GPU {g.index} {g.pcie or 'n/a'}" for g in self.gpus)
        drv = f", driver {self.driver_version}" if self.driver_version else ""
        return f"telemetry: NVML, {n} GPU{'s' if n != 1 else ''} ({', '.join(names)}){drv}; {pcie}"

    # ------------------------------------------------------------------ errors

    def _query(self, g: _Gpu, key: str, fn: Any) -> Any:
        if key in g.unsupported:
            return None
        try:
            return fn()
        except (AttributeError, TypeError):  # binding too old for this call
            g.unsupported.add(key)
            return None
        except self.nv.NVMLError as exc:
            self._on_error(g, key, exc)
            return None

    def _on_error(self, g: _Gpu, key: str, exc: BaseException) -> None:
        code = nvml_error_code(exc)
        if code in LOST_CODES:
            if not g.lost:
                g.lost = True
                self._pending.append(Alert(
                    alert_kind="gpu_lost", source="nvml",
                    message=f"GPU {g.index} ({g.name or '?'}, {g.uuid or '?'}): {LOST_CODES[code]}"
                            f" (NVML error {code}); its telemetry stops",
                ))
            raise _GpuLost
        if code in UNSUPPORTED_CODES:
            g.unsupported.add(key)

    # ------------------------------------------------------------------ counters

    def _update_counters(self, g: _Gpu, fvs: Any) -> None:
        tx, rx = fvs[0], fvs[1]
        trust = g.cadence.trusted_bytes() if g.cadence else None
        prev_s = g.rx.t_s if g.rx.t_s is not None else g.tx.t_s
        deltas, t_s = [], None
        if tx.nvmlReturn == 0:
            t_s = field_time_s(tx)
            deltas.append(g.tx.update(int(field_int(tx)[0]), t_s, trust))
        if rx.nvmlReturn == 0:
            t_s = field_time_s(rx)
            deltas.append(g.rx.update(int(field_int(rx)[0]), t_s, trust))
        if g.cadence and t_s is not None and prev_s is not None:
            g.cadence.observe(deltas, t_s - prev_s, t_s)

    def _read_counters(self, g: _Gpu) -> None:
        self.counter_reads += 1
        try:
            fvs = self.nv.nvmlDeviceGetFieldValues(g.handle, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES])
        except self.nv.NVMLError as exc:
            try:
                self._on_error(g, "pcie_counters", exc)
            except _GpuLost:
                return
            if "pcie_counters" in g.unsupported:
                g.pcie = "throughput"
            return
        self._update_counters(g, fvs)

    def poll(self) -> float | None:
        """Read the counters of every GPU that is due; returns the seconds until the next
        one is (the poll thread sleeps that long)."""
        with self._lock:
            now = self._clock()
            due: list[float] = []
            for g in self.gpus:
                if g.pcie != "counters" or g.lost:
                    continue
                if now >= g.next_read_s - 0.001:
                    self._read_counters(g)
                    g.next_read_s = now + g.cadence.period_s()
                due.append(g.next_read_s)
        return min(1.0, max(0.001, min(due) - now)) if due else None

    # ------------------------------------------------------------------ sample

    def sample(self) -> list[_Event]:
        marks: dict[int, tuple[Any, Any]] = {}
        with self._lock:  # a fresh read closes the interval exactly now
            for g in self.gpus:
                if g.pcie == "counters" and not g.lost:
                    self._read_counters(g)
                    marks[g.index] = (g.tx.mark(), g.rx.mark())
        throughput = self._throughput_all()
        out: list[_Event] = []
        for g in self.gpus:
            try:
                out.append(self._sample_gpu(g, marks.get(g.index), throughput.get(g.index)))
            except _GpuLost:
                out.append(self._lost_sample(g))
        pending = []
        while self._pending:
            pending.append(self._pending.popleft())
        return pending + out

    def _throughput_all(self) -> dict[int, tuple[Any, Any]]:
        """nvmlDeviceGetPcieThroughput blocks ~21 ms; all GPUs and both directions run in
        parallel threads, which overlap (measured: 8 calls take 22 ms in all)."""
        nv = self.nv
        gpus = [g for g in self.gpus if g.pcie == "throughput" and not g.lost]
        if not gpus:
            return {}
        calls = []
        for g in gpus:
            for counter in (0, 1):  # NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES
                calls.append(lambda h=g.handle, c=counter: nv.nvmlDeviceGetPcieThroughput(h, c))
        results = call_in_threads(calls, timeout_s=1.0)
        out = {}
        for i, g in enumerate(gpus):
            pair = []
            for r in results[2 * i: 2 * i + 2]:
                if isinstance(r, BaseException):
                    try:
                        self._on_error(g, "pcie_throughput", r)
                    except _GpuLost:
                        pass
                    r = None
                pair.append(None if r is None else float(r) * 1000.0)  # KB/s (measured x1000)
            if "pcie_throughput" in g.unsupported:
                g.pcie = None
            out[g.index] = (pair[0], pair[1])
        return out

    def _lost_sample(self, g: _Gpu) -> GpuSample:
        return GpuSample(index=g.index, uuid=g.uuid, name=g.name,
                         pcie_gen_max=g.gen_max, pcie_width_max=g.width_max)

    def _sample_gpu(self, g: _Gpu, marks: Any, throughput: Any) -> GpuSample:
        if g.lost:
            return self._lost_sample(g)
        nv, h, q = self.nv, g.handle, self._query
        used = reserved = total = None
        mem = q(g, "mem_v2", lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2))
        if mem is not None:
            used, reserved, total = int(mem.used), int(mem.reserved), int(mem.total)
        elif "mem_v2" in g.unsupported:
            mem = q(g, "mem_v1", lambda: nv.nvmlDeviceGetMemoryInfo(h))
            if mem is not None:
                used, total = int(mem.used), int(mem.total)
        util = q(g, "util", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        power_mw = q(g, "power", lambda: nv.nvmlDeviceGetPowerUsage(h))
        limit_mw = q(g, "power_limit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        temp = q(g, "temp", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        sm_clock = q(g, "sm_clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        reasons = q(g, "clock_events", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
        if reasons is None and "clock_events" in g.unsupported:
            reasons = q(g, "throttle", lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        gen = q(g, "gen", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h))
        width = q(g, "width", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h))
        replay = q(g, "replay", lambda: nv.nvmlDeviceGetPcieReplayCounter(h))
        nvl_tx, nvl_rx = self._nvlink_rates(g)

        tx = rx = None
        method = g.pcie
        if g.pcie == "counters" and marks is not None:
            if g.prev_marks is not None:
                tx = interval_rate(g.prev_marks[0], marks[0])
                rx = interval_rate(g.prev_marks[1], marks[1])
            g.prev_marks = marks
        elif throughput is not None:
            tx, rx = throughput
            method = "throughput"
        return GpuSample(
            index=g.index, uuid=g.uuid, name=g.name,
            mem_used_bytes=used, mem_reserved_bytes=reserved, mem_total_bytes=total,
            util_pct=None if util is None else float(util.gpu),
            pcie_tx_bytes_s=tx, pcie_rx_bytes_s=rx, pcie_method=method,
            pcie_gen=gen, pcie_width=width, pcie_gen_max=g.gen_max, pcie_width_max=g.width_max,
            pcie_replay_count=replay,
            nvlink_tx_bytes_s=nvl_tx, nvlink_rx_bytes_s=nvl_rx,
            power_w=None if power_mw is None else power_mw / 1000.0,
            power_limit_w=None if limit_mw is None else limit_mw / 1000.0,
            temp_c=None if temp is None else float(temp),
            sm_clock_mhz=sm_clock, clock_event_reasons=reasons,
        )

    def _nvlink_rates(self, g: _Gpu) -> tuple[float | None, float | None]:
        if not g.nvlink_links:
            return None, None
        nv = self.nv
        ids = [(f, link) for link in g.nvlink_links for f in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB)]
        fvs = self._query(g, "nvlink", lambda: nv.nvmlDeviceGetFieldValues(g.handle, ids))
        if fvs is None:
            return None, None
        tx_kib = rx_kib = 0.0
        t_s = time.time()
        for i, (fid, _link) in enumerate(ids):
            fv = fvs[i]
            if fv.nvmlReturn != 0:
                continue
            t_s = field_time_s(fv)
            if fid == FI_NVLINK_DATA_TX_KIB:
                tx_kib += field_int(fv)[0]
            else:
                rx_kib += field_int(fv)[0]
        prev, g.nvlink_prev = g.nvlink_prev, (tx_kib, rx_kib, t_s)
        if prev is None or t_s <= prev[2] or tx_kib < prev[0] or rx_kib < prev[1]:
            return None, None
        dt = t_s - prev[2]
        return (tx_kib - prev[0]) * 1024 / dt, (rx_kib - prev[1]) * 1024 / dt

    # ------------------------------------------------------------------ events

    def wait_events(self, timeout_s: float) -> list[_Event]:
        nv = self.nv
        if self._es is None:
            time.sleep(timeout_s)
            return []
        try:
            data = nv.nvmlEventSetWait_v2(self._es, max(1, int(timeout_s * 1000)))
        except nv.NVMLError as exc:
            if nvml_error_code(exc) != ERR_TIMEOUT:
                time.sleep(timeout_s)  # a broken event set must not spin
            return []
        if not data.eventType & EVENT_XID:
            return []
        xid = int(data.eventData)
        index = None
        uuid = self._static(lambda: _text(nv.nvmlDeviceGetUUID(data.device)))
        for g in self.gpus:
            if uuid is not None and g.uuid == uuid:
                index = g.index
        where = f"GPU {index}" if index is not None else f"GPU {uuid or '?'}"
        meaning = XID_MEANING.get(xid, "see NVIDIA's Xid catalog")
        return [Alert(alert_kind="xid", source="nvml",
                      severity="warning" if xid in XID_WARNING_ONLY else "error",
                      message=f"{where}: Xid {xid} ({meaning})")]

    def close(self) -> None:
        nv = self.nv
        if self._es is not None:
            self._static(lambda: nv.nvmlEventSetFree(self._es))
            self._es = None
        self._static(nv.nvmlShutdown)
