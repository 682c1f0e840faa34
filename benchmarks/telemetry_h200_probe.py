"""Where the NVML sampler's CPU goes, and whether GPM is a cheaper exact PCIe source (H200).

    PYTHONPATH=. python benchmarks/telemetry_h200_probe.py

Prints: CPU per sampler thread with the GPU idle; CPU per NVML call (PCIe counter fields
one or two at a time, nvmlEventSetWait_v2, GPM sample), idle and under a full-speed copy;
GPM PCIe rates (NVML_GPM_METRIC_PCIE_{TX,RX}_PER_SEC over 1 s windows) against NVML's
counters read every 5 ms; and when counter reads were late (gaps > 40 ms) relative to the
load process's events.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time

import psutil
import pynvml as nv
from telemetry_h200 import GB, Reference, per_call, section, start_load

from tuiapp.telemetry.nvml_backend import FI_PCIE_RX_BYTES, FI_PCIE_TX_BYTES, NvmlBackend
from tuiapp.telemetry.sampler import run_gpu_sampler


def thread_cpu() -> dict[str, float]:
    names = {t.native_id: t.name for t in threading.enumerate()}
    return {names.get(t.id, str(t.id)): t.user_time + t.system_time for t in psutil.Process().threads()}


async def idle_breakdown(seconds: float) -> None:
    b = NvmlBackend(nv)
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(lambda e: None, b, stop=stop))
    await asyncio.sleep(1.5)
    c0, w0 = thread_cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    c1, wall = thread_cpu(), time.monotonic() - w0
    for name in sorted(c1):
        if name.startswith("tuiapp"):
            print(f"  {name:<24} {(c1[name] - c0.get(name, 0)) / wall * 100:.3f}% of one core")
    stop.set()
    await task


def gpm_rates(h, seconds: float) -> list[tuple[float, float, float, float]]:
    """(t_a, t_b, tx_B/s, rx_B/s) from GPM samples 1 s apart."""
    out = []
    s1, s2 = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, s1)
    ta = time.time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(1.0)
        nv.nvmlGpmSampleGet(h, s2)
        tb = time.time()
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = 2
        mg.sample1, mg.sample2 = s1, s2
        mg.metrics[0].metricId = nv.NVML_GPM_METRIC_PCIE_TX_PER_SEC
        mg.metrics[1].metricId = nv.NVML_GPM_METRIC_PCIE_RX_PER_SEC
        nv.nvmlGpmMetricsGet(mg)
        rets = (mg.metrics[0].nvmlReturn, mg.metrics[1].nvmlReturn)
        if rets != (0, 0):
            print("  GPM metric returns", rets)
        out.append((ta, tb, mg.metrics[0].value * 2**20, mg.metrics[1].value * 2**20))
        s1, s2, ta = s2, s1, tb
    nv.nvmlGpmSampleFree(s1)
    nv.nvmlGpmSampleFree(s2)
    return out


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    section("CPU per sampler thread, GPU idle, 15 s")
    asyncio.run(idle_breakdown(15))

    section("CPU per call, GPU idle (wall / thread CPU, µs)")
    rows = {
        "fields [197,198]": per_call(lambda: nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES]), 200),
        "fields [198]": per_call(lambda: nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_RX_BYTES]), 200),
    }
    es = nv.nvmlEventSetCreate()
    nv.nvmlDeviceRegisterEvents(h, 0x8, es)

    def wait() -> None:
        try:
            nv.nvmlEventSetWait_v2(es, 500)
        except nv.NVMLError:
            pass
    rows["nvmlEventSetWait_v2(500 ms)"] = per_call(wait, 3)
    gpm_ok = False
    try:
        gpm_ok = bool(nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
    except Exception as exc:  # probing
        print("GPM support query failed:", exc)
    print("GPM supported:", gpm_ok)
    if gpm_ok:
        s = nv.nvmlGpmSampleAlloc()
        rows["nvmlGpmSampleGet"] = per_call(lambda: nv.nvmlGpmSampleGet(h, s), 50)
        nv.nvmlGpmSampleFree(s)
    for k, (w, c) in rows.items():
        print(f"  {k:<30} wall {w:9.0f}   cpu {c:9.0f}")

    section("under load: h2d full 8 s, then d2h 20 GB/s 8 s (GPM vs counters; call costs; gaps)")
    ref = Reference(h)
    ref.thread.start()
    phases = [{"name": "idle", "kind": "idle", "dur_s": 2.0},
              {"name": "h2d full", "kind": "h2d", "rate": None, "dur_s": 8.0},
              {"name": "d2h 20 GB/s", "kind": "d2h", "rate": 20 * GB, "dur_s": 8.0}]
    t_start = time.time()
    proc, lines, done = start_load(phases)
    costs = {}
    while not any(x.get("event") == "ready" for x in lines) and not done.is_set():
        time.sleep(0.05)
    time.sleep(3.0)  # inside h2d full
    costs["fields [197,198] under h2d full"] = per_call(
        lambda: nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES]), 200)
    gpm = []
    if gpm_ok:
        try:
            gpm = gpm_rates(h, 12.0)
        except Exception as exc:  # probing
            print("GPM rates failed:", type(exc).__name__, exc)
    done.wait(60)
    proc.wait()
    ref.halt.set()
    for k, (w, c) in costs.items():
        print(f"  {k:<34} wall {w:9.0f}   cpu {c:9.0f}")
    phs = [x for x in lines if x.get("event") == "phase"]
    ready = next((x["t"] for x in lines if x.get("event") == "ready"), None)
    print(f"  load process ready at +{(ready or t_start) - t_start:.2f} s")
    for ph in phs:
        print(f"  phase {ph['name']:<12} +{ph['t0'] - t_start:6.2f} .. +{ph['t1'] - t_start:6.2f} s "
              f"payload {ph['bytes'] / (ph['t1'] - ph['t0']) / GB:.2f} GB/s")
    gaps = [(ref.t[i] - t_start, (ref.t[i] - ref.t[i - 1]) * 1e3) for i in range(1, len(ref.t))
            if ref.t[i] - ref.t[i - 1] > 0.04]
    print(f"  reference reads: {len(ref.t)}; gaps > 40 ms: " +
          ", ".join(f"+{t:.2f}s {g:.0f}ms" for t, g in gaps[:20]))
    if gpm:
        print(f"  {'window':<18}{'GPM tx':>9}{'ctr tx':>9}{'GPM rx':>9}{'ctr rx':>9}  (GB/s)")
        ratios = []
        for ta, tb, tx, rx in gpm:
            ctx, crx = ref.rate(ta, tb, "tx"), ref.rate(ta, tb, "rx")
            print(f"  +{ta - t_start:5.2f}..+{tb - t_start:5.2f}  {tx / GB:9.2f}{ctx / GB:9.2f}"
                  f"{rx / GB:9.2f}{crx / GB:9.2f}")
            big = max(ctx, crx)
            if big > 1 * GB:
                ratios.append((tx if ctx > crx else rx) / big)
        if ratios:
            print(f"  GPM / counters on loaded windows: mean {statistics.mean(ratios):.4f}, "
                  f"min {min(ratios):.4f}, max {max(ratios):.4f}")
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
