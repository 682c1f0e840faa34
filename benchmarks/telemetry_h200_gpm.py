"""GPM PCIe metrics vs the 32-bit counter fields, and what each PCIe source costs (H200).

    PYTHONPATH=. python benchmarks/telemetry_h200_gpm.py

For GPM metrics 20/21 (PCIE_{TX,RX}_PER_SEC, MiB/s) and 255/256 (PCIE_{TX,RX}, "since
reboot") over 1 s windows, against NVML's counters read every 5 ms, under idle, 10 GB/s
and full-speed copies each way. Also the thread CPU of one nvmlDeviceGetPcieThroughput
call and of a 1 Hz GPM sampler.
"""

from __future__ import annotations

import time

import pynvml as nv
from telemetry_h200 import GB, Reference, per_call, section, start_load

METRICS = {"tx_per_s": 20, "rx_per_s": 21, "tx_total": 255, "rx_total": 256}


def gpm_get(s1, s2, metrics: dict[str, int] = METRICS) -> dict[str, tuple[int, float]]:
    """{name: (nvmlReturn, value)} for ``metrics`` between two GPM samples."""
    mg = nv.c_nvmlGpmMetricsGet_t()
    mg.version = nv.NVML_GPM_METRICS_GET_VERSION
    mg.numMetrics = len(metrics)
    mg.sample1, mg.sample2 = s1, s2
    for i, mid in enumerate(metrics.values()):
        mg.metrics[i].metricId = mid
    try:
        nv.nvmlGpmMetricsGet(mg)
    except nv.NVMLError as exc:
        return {"error": (-1, str(exc))}
    return {k: (int(mg.metrics[i].nvmlReturn), float(mg.metrics[i].value)) for i, k in enumerate(metrics)}


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    section("thread CPU per call (µs): PcieThroughput, GPM sample + metrics")
    w, c = per_call(lambda: nv.nvmlDeviceGetPcieThroughput(h, 1), 20)
    print(f"  nvmlDeviceGetPcieThroughput     wall {w:8.0f}  cpu {c:8.0f}")
    s1, s2 = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, s1)
    time.sleep(0.2)

    def one() -> None:
        nv.nvmlGpmSampleGet(h, s2)
        gpm_get(s1, s2)
    w, c = per_call(one, 50)
    print(f"  GPM sample + metrics get        wall {w:8.0f}  cpu {c:8.0f}")
    print("  metrics on an idle window:", gpm_get(s1, s2))

    section("GPM vs counters under copy loads (1 s windows, GB/s)")
    ref = Reference(h)
    ref.thread.start()
    phases = [{"name": "idle", "kind": "idle", "dur_s": 2.0}]
    for d in ("h2d", "d2h"):
        for r in (10 * GB, None):
            phases.append({"name": f"{d} {'full' if r is None else '10'}", "kind": d, "rate": r, "dur_s": 5.0})
    t_start = time.time()
    proc, lines, done = start_load(phases)
    nv.nvmlGpmSampleGet(h, s1)
    ta = time.time()
    rows = []
    while not done.is_set():
        time.sleep(1.0)
        nv.nvmlGpmSampleGet(h, s2)
        tb = time.time()
        rows.append((ta, tb, gpm_get(s1, s2)))
        s1, s2, ta = s2, s1, tb
    proc.wait()
    ref.halt.set()
    for ph in (x for x in lines if x.get("event") == "phase"):
        print(f"  phase {ph['name']:<9} +{ph['t0'] - t_start:6.2f}..+{ph['t1'] - t_start:6.2f}")
    print(f"  {'window':<15}{'ctr tx':>8}{'ctr rx':>8}{'gpm tx/s':>10}{'gpm rx/s':>10}"
          f"{'255 tx':>14}{'256 rx':>14}")
    for ta, tb, m in rows:
        ctx, crx = ref.rate(ta, tb, "tx") / GB, ref.rate(ta, tb, "rx") / GB

        def fmt(key: str, scale: float, m=m) -> str:
            ret, v = m.get(key, (-2, 0.0))
            return f"{v * scale:.3f}" if ret == 0 else f"ret{ret}"
        print(f"  +{ta - t_start:5.1f}..+{tb - t_start:5.1f}{ctx:8.2f}{crx:8.2f}"
              f"{fmt('tx_per_s', 2**20 / GB):>10}{fmt('rx_per_s', 2**20 / GB):>10}"
              f"{fmt('tx_total', 1):>14}{fmt('rx_total', 1):>14}")
    nv.nvmlGpmSampleFree(s1)
    nv.nvmlGpmSampleFree(s2)
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
