"""What a PCIe-counter read costs and what could make fewer reads safe (run on the H200).

    PYTHONPATH=. python benchmarks/telemetry_h200_cadence.py --out DIR

Prints, and writes DIR/cadence.json with the raw series:
1. the machine: CPU governor, idle states, persistence mode;
2. thread CPU (user / system) per call, calls 48 ms apart, for the counter fields, the
   link generation and width, a GPM sample, memory, temperature and PcieThroughput;
3. CPU per counter read against the spacing of the reads, free and pinned to one core,
   and with another process keeping a different core busy;
4. whether consecutive counter reads return fresh values (value and timestamp changes);
5. during idle / full-speed / throttled copies: the current link generation and width every
   10 ms, the counters every 5 ms and GPM samples every 10 ms, to see whether the link
   drops to a slower generation when idle (a tighter wrap bound) and how stale GPM is.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time

import pynvml as nv
from telemetry_h200 import start_load
from telemetry_h200_gpm import gpm_get

FIELDS = [197, 198]
PER_S = {"tx_per_s": 20, "rx_per_s": 21}


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - a probe, report and go on
        return f"error: {exc}"


def rusage_thread() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime, r.ru_stime


def spaced(fn, n: int, gap_s: float) -> dict:
    """Per-call wall, user and system µs for calls ``gap_s`` apart."""
    wall = 0.0
    u0, s0 = rusage_thread()
    c0 = time.thread_time()
    for _ in range(n):
        if gap_s:
            time.sleep(gap_s)
        w0 = time.perf_counter()
        fn()
        wall += time.perf_counter() - w0
    u1, s1 = rusage_thread()
    # thread_time includes the sleep wake-ups too; keep it to compare with the rusage split
    return {"wall_us": wall / n * 1e6, "user_us": (u1 - u0) / n * 1e6, "sys_us": (s1 - s0) / n * 1e6,
            "thread_us": (time.thread_time() - c0) / n * 1e6, "n": n, "gap_ms": gap_s * 1e3}


def costs(h) -> dict:
    out = {}
    s1, s2 = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, s1)
    calls = {
        "fields_197_198": lambda: nv.nvmlDeviceGetFieldValues(h, FIELDS),
        "field_197_only": lambda: nv.nvmlDeviceGetFieldValues(h, [197]),
        "curr_link_gen": lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h),
        "curr_link_width": lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h),
        "gpm_sample_get": lambda: nv.nvmlGpmSampleGet(h, s2),
        "gpm_sample_and_metrics": lambda: (nv.nvmlGpmSampleGet(h, s2), gpm_get(s1, s2, PER_S)),
        "memory_v2": lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2),
        "temperature": lambda: nv.nvmlDeviceGetTemperature(h, 0),
        "utilization": lambda: nv.nvmlDeviceGetUtilizationRates(h),
        "power": lambda: nv.nvmlDeviceGetPowerUsage(h),
    }
    for name, fn in calls.items():
        try:
            out[name] = spaced(fn, 60, 0.048)
        except nv.NVMLError as exc:
            out[name] = {"error": str(exc)}
    try:
        out["pcie_throughput"] = spaced(lambda: nv.nvmlDeviceGetPcieThroughput(h, 1), 15, 0.048)
    except nv.NVMLError as exc:
        out["pcie_throughput"] = {"error": str(exc)}
    return out


def spacing_curve(h, label: str) -> list[dict]:
    rows = []
    for gap in (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.048, 0.1, 0.25):
        n = 300 if gap <= 0.005 else (100 if gap <= 0.048 else 20)
        r = spaced(lambda: nv.nvmlDeviceGetFieldValues(h, FIELDS), n, gap)
        r["label"] = label
        rows.append(r)
    return rows


def freshness(h) -> dict:
    vals, stamps = [], []
    for _ in range(300):
        fv = nv.nvmlDeviceGetFieldValues(h, FIELDS)
        vals.append((int(fv[0].value.uiVal), int(fv[1].value.uiVal)))
        stamps.append(int(fv[0].timestamp))
    return {"reads": len(vals), "distinct_values": len(set(vals)), "distinct_timestamps": len(set(stamps)),
            "latency_usec_last": int(fv[0].latencyUsec),
            "span_ms": (stamps[-1] - stamps[0]) / 1e3}


def trace(h, phases: list[dict]) -> dict:
    """Link state, counters and GPM while the load process runs ``phases``."""
    load, lines, done = start_load(phases)
    series = {"link": [], "ctr": [], "gpm": []}
    halt = threading.Event()

    def link_loop():
        while not halt.is_set():
            t = time.time()
            try:
                g = nv.nvmlDeviceGetCurrPcieLinkGeneration(h)
                w = nv.nvmlDeviceGetCurrPcieLinkWidth(h)
            except nv.NVMLError as exc:
                g = w = str(exc)
            series["link"].append((t, g, w))
            time.sleep(0.01)

    def ctr_loop():
        while not halt.is_set():
            fv = nv.nvmlDeviceGetFieldValues(h, FIELDS)
            series["ctr"].append((time.time(), int(fv[0].timestamp), int(fv[0].value.uiVal),
                                  int(fv[1].value.uiVal)))
            time.sleep(0.005)

    def gpm_loop():
        a, b = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
        nv.nvmlGpmSampleGet(h, a)
        while not halt.is_set():
            time.sleep(0.01)
            nv.nvmlGpmSampleGet(h, b)
            t = time.time()
            series["gpm"].append((t, gpm_get(a, b)))
            a, b = b, a

    threads = [threading.Thread(target=f, daemon=True) for f in (link_loop, ctr_loop, gpm_loop)]
    for t in threads:
        t.start()
    done.wait()
    load.wait()
    time.sleep(0.5)
    halt.set()
    for t in threads:
        t.join()
    return {"phases": lines, **series}


def busy_other_core() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c",
                             "import os; os.sched_setaffinity(0, {1})\nwhile True: pass"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    res: dict = {}
    res["machine"] = {
        "cpu": sh("lscpu | grep -E 'Model name|^CPU\\(s\\)|MHz'"),
        "governor": sh("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "driver_cpufreq": sh("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        "idle_states": sh("cat /sys/devices/system/cpu/cpu0/cpuidle/state*/name | tr '\\n' ' '"),
        "idle_latency_us": sh("cat /sys/devices/system/cpu/cpu0/cpuidle/state*/latency | tr '\\n' ' '"),
        "persistence": sh("nvidia-smi -q | grep -i -E 'Persistence|Link Gen|Current|Max' | head -20"),
        "affinity": sorted(os.sched_getaffinity(0)),
    }
    print(json.dumps(res["machine"], indent=1), flush=True)
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    res["costs_48ms"] = costs(h)
    for k, v in res["costs_48ms"].items():
        print(f"cost {k:24s} {json.dumps(v)}", flush=True)
    res["freshness"] = freshness(h)
    print("freshness", res["freshness"], flush=True)
    curve = spacing_curve(h, "free")
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    curve += spacing_curve(h, "pinned")
    os.sched_setaffinity(0, set(cpus))
    spin = busy_other_core()
    try:
        curve += spacing_curve(h, "other-core-busy")
    finally:
        spin.kill()
    res["spacing"] = curve
    for r in curve:
        print(f"spacing {r['label']:16s} gap {r['gap_ms']:6.1f} ms  user {r['user_us']:7.1f}  "
              f"sys {r['sys_us']:7.1f}  wall {r['wall_us']:7.1f} us/call", flush=True)
    gb = 1e9
    phases = [{"name": "idle", "kind": "idle", "dur_s": 2.0},
              {"name": "h2d full", "kind": "h2d", "rate": None, "dur_s": 2.0},
              {"name": "idle2", "kind": "idle", "dur_s": 3.0},
              {"name": "d2h 10", "kind": "d2h", "rate": 10 * gb, "dur_s": 2.0},
              {"name": "idle3", "kind": "idle", "dur_s": 2.0},
              {"name": "h2d 2", "kind": "h2d", "rate": 2 * gb, "dur_s": 2.0},
              {"name": "idle4", "kind": "idle", "dur_s": 1.0}]
    res["trace"] = trace(h, phases)
    link = res["trace"]["link"]
    changes = [link[0]] + [b for a, b in zip(link, link[1:], strict=False) if (a[1], a[2]) != (b[1], b[2])]
    t0 = link[0][0]
    print("link changes:", [(round(t - t0, 3), g, w) for t, g, w in changes][:40], flush=True)
    for ph in res["trace"]["phases"]:
        if ph.get("event") == "phase":
            print(f"phase {ph['name']:9s} +{ph['t0'] - t0:6.2f}..+{ph['t1'] - t0:6.2f}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cadence.json"), "w") as f:
        json.dump(res, f)
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
