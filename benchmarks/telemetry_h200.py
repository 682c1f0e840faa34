"""Accuracy and cost of the NVML GPU sampler on a real GPU (run on the H200 via the device tool).

    PYTHONPATH=. python benchmarks/telemetry_h200.py [--out DIR] [--phase-s 6]

What it prints:
1. probes: driver, link, PCIe counter field width, NVLink fields, per-call costs;
2. sampler CPU with the GPU idle (threads of run_gpu_sampler at the default 1 s rate);
3. while benchmarks/telemetry_h200_load.py (another process) copies host->device and
   device->host at 5, 10, 20 GB/s and full speed: our PCIe figure (GpuSample, counter
   method) per phase vs NVML's own counters read independently every 5 ms over the same
   windows (target: within 3%) and vs the copy payload rate (target: within 10%; the
   counters include PCIe packet overhead), and the sampler's CPU under load;
4. memory: GpuSample.mem_used_bytes while the load holds a 20 GiB tensor vs the baseline
   plus what torch reserved (target: within 1%);
5. the fallback method (nvmlDeviceGetPcieThroughput in parallel threads) under the same loads;
6. `tuiapp gpus` and `tuiapp gpus --json` on the real GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from importlib import metadata

import psutil
import pynvml as nv

from tuiapp.telemetry.counters import CALM_S, WrapCounter
from tuiapp.telemetry.nvml_backend import (
    FI_NVLINK_DATA_RX_KIB,
    FI_NVLINK_DATA_TX_KIB,
    FI_NVLINK_LINK_COUNT,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    NvmlBackend,
    field_int,
    field_time_s,
)
from tuiapp.telemetry.sampler import run_gpu_sampler

HERE = os.path.dirname(os.path.abspath(__file__))
GB = 1e9


def section(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def sampler_thread_cpu_s() -> float:
    """CPU seconds (user+system) of this process's sampler threads (tuiapp-gpu-*)."""
    ids = {t.native_id for t in threading.enumerate() if t.name.startswith("tuiapp-gpu")}
    return sum(t.user_time + t.system_time for t in psutil.Process().threads() if t.id in ids)


class CpuTrace:
    """The sampler threads' CPU seconds every 0.25 s, to cut per-phase CPU out of one run."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.run, name="cpu-trace", daemon=True)

    def run(self) -> None:
        while not self.halt.is_set():
            self.points.append((time.time(), sampler_thread_cpu_s()))
            time.sleep(0.25)

    def pct_core(self, ta: float, tb: float) -> float:
        inside = [p for p in self.points if ta <= p[0] <= tb]
        if len(inside) < 2:
            return float("nan")
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return (c1 - c0) / (t1 - t0) * 100


def per_call_spaced(fn, n: int, gap_s: float) -> tuple[float, float]:
    """(wall µs, thread-CPU µs) per call when calls are ``gap_s`` apart, as the poll thread
    makes them (a call after a pause can cost more than back-to-back ones)."""
    wall = cpu = 0.0
    for _ in range(n):
        time.sleep(gap_s)
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        wall += time.perf_counter() - w0
        cpu += time.thread_time() - c0
    return wall / n * 1e6, cpu / n * 1e6


def per_call(fn, n: int) -> tuple[float, float]:
    """(wall µs, thread-CPU µs) per call."""
    w0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - w0) / n * 1e6, (time.thread_time() - c0) / n * 1e6


class Reference:
    """NVML's own PCIe counters read independently every 5 ms, unwrapped."""

    def __init__(self, handle, period_s: float = 0.005) -> None:
        self.h = handle
        self.period_s = period_s
        self.tx = WrapCounter(bits=32)
        self.rx = WrapCounter(bits=32)
        self.t: list[float] = []
        self.txs: list[int] = []
        self.rxs: list[int] = []
        self.max_gap_s = 0.0
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ref-reader", daemon=True)

    def run(self) -> None:
        while not self.halt.is_set():
            fvs = nv.nvmlDeviceGetFieldValues(self.h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES])
            t = field_time_s(fvs[0])
            if self.t:
                self.max_gap_s = max(self.max_gap_s, t - self.t[-1])
            self.tx.update(int(field_int(fvs[0])[0]), t)
            self.rx.update(int(field_int(fvs[1])[0]), field_time_s(fvs[1]))
            self.t.append(t)
            self.txs.append(self.tx.total)
            self.rxs.append(self.rx.total)
            time.sleep(self.period_s)

    def total_at(self, t: float, series: list[int]) -> float:
        i = bisect.bisect_left(self.t, t)
        if i <= 0:
            return float(series[0])
        if i >= len(self.t):
            return float(series[-1])
        t0, t1 = self.t[i - 1], self.t[i]
        return series[i - 1] + (series[i] - series[i - 1]) * (t - t0) / (t1 - t0)

    def rate(self, ta: float, tb: float, direction: str) -> float:
        series = self.txs if direction == "tx" else self.rxs
        return (self.total_at(tb, series) - self.total_at(ta, series)) / (tb - ta)


async def sample_while(backend, seconds: float | None, until: threading.Event | None = None,
                       warm_s: float = 1.5):
    """Run run_gpu_sampler; returns (events, sampler-thread CPU s, wall s) measured from
    ``warm_s`` after start (threads warm) to the end."""
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, backend, interval_s=1.0, stop=stop))
    await asyncio.sleep(warm_s)
    c0, w0 = sampler_thread_cpu_s(), time.monotonic()
    if seconds is not None:
        await asyncio.sleep(seconds)
    else:
        while not until.is_set():
            await asyncio.sleep(0.1)
    cpu, wall = sampler_thread_cpu_s() - c0, time.monotonic() - w0
    stop.set()
    await task
    await asyncio.sleep(0.3)
    return events, cpu, wall


def start_load(phases: list[dict]) -> tuple[subprocess.Popen, list[dict], threading.Event]:
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "telemetry_h200_load.py"),
                             json.dumps(phases)], stdout=subprocess.PIPE, text=True)
    lines: list[dict] = []
    done = threading.Event()

    def reader() -> None:
        for line in proc.stdout:
            try:
                lines.append(json.loads(line))
            except ValueError:
                print("load:", line.rstrip())
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    return proc, lines, done


def copy_phases(phase_s: float, rates: list[float | None], directions=("h2d", "d2h")) -> list[dict]:
    out = [{"name": "idle", "kind": "idle", "dur_s": 3.0}]
    for d in directions:
        for r in rates:
            out.append({"name": f"{d} {'full' if r is None else f'{r / GB:.0f} GB/s'}", "kind": d,
                        "rate": r, "dur_s": phase_s})
    return out


def analyse_pcie(events, phases_done, ref: Reference, method_label: str) -> list[dict]:
    gpus = [e for e in events if e.kind == "gpu" and e.index == 0]
    rows = []
    print(f"{'phase':<14}{'payload':>10}{'ours':>10}{'NVML ctr':>10}{'ours/ctr':>10}"
          f"{'ours/payload':>14}{'other dir':>11}{'windows':>9}   ({method_label}, GB/s)")
    for ph in phases_done:
        if ph.get("kind") not in ("h2d", "d2h", "idle"):
            continue
        key = "rx" if ph["kind"] == "h2d" else "tx"
        other = "tx" if key == "rx" else "rx"
        ours, ref_r, ours_o = [], [], []
        for a, b in zip(gpus, gpus[1:], strict=False):
            if a.t_s >= ph["t0"] + 0.25 and b.t_s <= ph["t1"] - 0.05:
                v = getattr(b, f"pcie_{key}_bytes_s")
                if v is None:
                    continue
                ours.append(v)
                ours_o.append(getattr(b, f"pcie_{other}_bytes_s") or 0.0)
                ref_r.append(ref.rate(a.t_s, b.t_s, key))
        payload = ph["bytes"] / (ph["t1"] - ph["t0"])
        if not ours:
            print(f"{ph['name']:<14}  no complete window")
            continue
        o, r = statistics.mean(ours), statistics.mean(ref_r)
        row = {"phase": ph["name"], "method": method_label, "payload_GBs": payload / GB,
               "ours_GBs": o / GB, "ref_GBs": r / GB, "other_dir_GBs": statistics.mean(ours_o) / GB,
               "windows": len(ours),
               "ours_vs_ref_pct": (o / r - 1) * 100 if r else None,
               "ours_vs_payload_pct": (o / payload - 1) * 100 if payload else None,
               "per_window_GBs": [v / GB for v in ours]}
        rows.append(row)

        def pct(x):
            return "n/a" if x is None else f"{x:+.1f}%"

        print(f"{ph['name']:<14}{payload / GB:>10.2f}{o / GB:>10.2f}{r / GB:>10.2f}"
              f"{pct(row['ours_vs_ref_pct']):>10}{pct(row['ours_vs_payload_pct']):>14}"
              f"{row['other_dir_GBs']:>11.2f}{len(ours):>9}")
    return rows


def probe(h) -> dict:
    info: dict = {}
    info["nvidia_ml_py"] = metadata.version("nvidia-ml-py")
    info["driver"] = nv.nvmlSystemGetDriverVersion()
    info["nvml"] = nv.nvmlSystemGetNVMLVersion()
    info["name"] = nv.nvmlDeviceGetName(h)
    for key, fn in [("gen_curr", nv.nvmlDeviceGetCurrPcieLinkGeneration),
                    ("width_curr", nv.nvmlDeviceGetCurrPcieLinkWidth),
                    ("gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration),
                    ("width_max", nv.nvmlDeviceGetMaxPcieLinkWidth)]:
        try:
            info[key] = fn(h)
        except nv.NVMLError as exc:
            info[key] = str(exc)
    fvs = nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES, FI_NVLINK_LINK_COUNT])
    info["fields"] = {int(f.fieldId): {"ret": int(f.nvmlReturn), "valueType": int(f.valueType),
                                       "value": field_int(f)[0] if f.nvmlReturn == 0 else None}
                      for f in fvs}
    n_links = info["fields"][FI_NVLINK_LINK_COUNT]["value"] or 0
    if n_links:
        ids = [(fid, link) for link in range(int(n_links))
               for fid in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB)]
        fvs = nv.nvmlDeviceGetFieldValues(h, ids)
        info["nvlink_data_fields_ok"] = sum(1 for f in fvs if f.nvmlReturn == 0)
        info["nvlink_data_fields_asked"] = len(ids)
        try:
            info["nvlink_link0_state"] = nv.nvmlDeviceGetNvLinkState(h, 0)
        except nv.NVMLError as exc:
            info["nvlink_link0_state"] = str(exc)
    try:
        info["event_mask"] = nv.nvmlDeviceGetSupportedEventTypes(h)
    except nv.NVMLError as exc:
        info["event_mask"] = str(exc)
    return info


async def idle_cpu(mode: str, seconds: float) -> dict:
    """The sampler's CPU on an idle GPU with PCIe poll ``mode``, measured after CALM_S (so
    the adaptive cadence has gone quiet) for ``seconds``; prints one line and returns it."""
    b = NvmlBackend(nv, pcie_poll=mode)
    reads0 = b.counter_reads
    p0 = time.process_time()
    events, cpu, wall = await sample_while(b, seconds, warm_s=CALM_S + 1.0)
    proc_cpu = time.process_time() - p0
    n_gpu, cadence = len(b.gpus), b.gpus[0].cadence
    row = {"sampler_pct_core": cpu / wall * 100, "per_gpu_pct": cpu / wall * 100 / n_gpu,
           "process_pct_core": proc_cpu / (wall + CALM_S + 1.3) * 100,
           "poll_period_ms": b.poll_period_s * 1e3 if b.poll_period_s else None,
           "reads_per_s": (b.counter_reads - reads0) / (wall + CALM_S + 1.0),
           "quiet": cadence.quiet if cadence else None,
           "band_bytes": cadence.trust_bytes if cadence else None, "gaps": b.gpus[0].rx.gaps}
    print(f"{mode:<9} sampler {row['per_gpu_pct']:.3f}% of one core per GPU ({n_gpu} GPU); "
          f"whole process incl. asyncio watchdog {row['process_pct_core']:.3f}%; "
          f"{row['reads_per_s']:.1f} counter reads/s over the run; quiet {row['quiet']}, "
          f"band {(row['band_bytes'] or 0) / 1e6:.2f} MB, n/a intervals {row['gaps']}", flush=True)
    gpus = [e for e in events if e.kind == "gpu"]
    if gpus:
        print("last idle sample:", gpus[-1].model_dump_json())
    return row


async def main_async(args) -> dict:
    results: dict = {}
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)

    section("probe")
    results["probe"] = probe(h)
    print(json.dumps(results["probe"], indent=1, default=str))

    section("per-call cost (200 calls; wall / CPU of the calling thread, µs)")
    b = NvmlBackend(nv)
    print("backend:", b.describe())
    costs = {
        "fields 197+198 (one call)": per_call(
            lambda: nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES]), 200),
        "backend.poll() (1 GPU)": per_call(b.poll, 200),
        "backend.sample() (1 GPU)": per_call(b.sample, 20),
        "fields 197+198, 48 ms apart": per_call_spaced(
            lambda: nv.nvmlDeviceGetFieldValues(h, [FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES]), 60, 0.048),
    }
    for k, (w, c) in costs.items():
        print(f"{k:<32} wall {w:8.0f} µs   cpu {c:8.0f} µs")
    results["call_costs_us"] = {k: {"wall": w, "cpu": c} for k, (w, c) in costs.items()}
    b.close()

    results["idle_cpu"] = {}
    for mode in ("adaptive", "fixed"):
        section(f"sampler CPU, GPU idle, {args.idle_s:.0f} s at the default 1 s interval, "
                f"PCIe poll {mode}")
        results["idle_cpu"][mode] = await idle_cpu(mode, args.idle_s)

    results["load_cpu"] = {}
    load_phases = [{"name": "idle", "kind": "idle", "dur_s": 4.0},
                   {"name": "h2d full", "kind": "h2d", "rate": None, "dur_s": args.phase_s + 4},
                   {"name": "d2h 10 GB/s", "kind": "d2h", "rate": 10 * GB, "dur_s": args.phase_s + 4},
                   {"name": "h2d 1 GB/s", "kind": "h2d", "rate": 1 * GB, "dur_s": args.phase_s + 4}]
    for mode in ("adaptive", "fixed"):
        section(f"sampler CPU under copy loads, PCIe poll {mode}")
        b = NvmlBackend(nv, pcie_poll=mode)
        trace = CpuTrace()
        trace.thread.start()
        proc, lines, done = start_load(load_phases)
        events, cpu, wall = await sample_while(b, None, until=done)
        proc.wait()
        trace.halt.set()
        rows = {}
        for ph in (x for x in lines if x.get("event") == "phase" and x["kind"] != "idle"):
            pct = trace.pct_core(ph["t0"] + 1.0, ph["t1"] - 0.5)
            rows[ph["name"]] = pct
            print(f"  {ph['name']:<12} sampler {pct:.3f}% of one core per GPU")
        print(f"  counter gaps (n/a intervals) tx={b.gpus[0].tx.gaps} rx={b.gpus[0].rx.gaps}")
        results["load_cpu"][mode] = rows

    rates = [5 * GB, 10 * GB, 20 * GB, None]
    phases = copy_phases(args.phase_s, rates)
    phases += [{"name": "mem 20 GiB", "kind": "mem", "bytes": 20 << 30, "dur_s": 5.0},
               {"name": "idle end", "kind": "idle", "dur_s": 2.0}]
    section("PCIe under known copy loads: counter method (default)")
    ref = Reference(h)
    ref.thread.start()
    b = NvmlBackend(nv)
    proc, lines, done = start_load(phases)
    events, cpu, wall = await sample_while(b, None, until=done)
    proc.wait()
    ref.halt.set()
    done_phases = [x for x in lines if x.get("event") == "phase"]
    rows = analyse_pcie(events, done_phases, ref, "counters")
    print(f"reference reader max gap {ref.max_gap_s * 1e3:.1f} ms; our counter gaps (wrap-unsafe "
          f"reads) tx={b.gpus[0].tx.gaps} rx={b.gpus[0].rx.gaps}")
    print(f"sampler CPU under load: {cpu / wall * 100:.3f}% of one core over {wall:.0f} s")
    results["pcie_counters"] = rows
    results["load_cpu_pct_core"] = cpu / wall * 100
    results["counter_gaps"] = [b.gpus[0].tx.gaps, b.gpus[0].rx.gaps]

    section("memory: 20 GiB tensor")
    gpus = [e for e in events if e.kind == "gpu" and e.index == 0]
    mem = next((x for x in done_phases if x["kind"] == "mem"), None)
    if mem:
        before = [g.mem_used_bytes for g in gpus if mem["t0"] - 2.5 <= g.t_s < mem["t0"]]
        during = [g.mem_used_bytes for g in gpus if mem["t_alloc"] + 1.2 <= g.t_s <= mem["t1"] - 0.05]
        if before and during:
            base = statistics.mean(before)
            expected = base + (mem["reserved_after"] - mem["reserved_before"])
            got = statistics.mean(during)
            dev_pct = (got / expected - 1) * 100
            print(f"baseline v2 used {base / 2**30:.3f} GiB; torch reserved +"
                  f"{(mem['reserved_after'] - mem['reserved_before']) / 2**30:.3f} GiB "
                  f"(allocated {mem['allocated'] / 2**30:.3f} GiB); expected {expected / 2**30:.3f} GiB; "
                  f"sampled {got / 2**30:.3f} GiB ({len(during)} samples): {dev_pct:+.3f}%")
            print(f"reserved (driver) {gpus[-1].mem_reserved_bytes / 2**30:.3f} GiB, total "
                  f"{gpus[-1].mem_total_bytes / 2**30:.3f} GiB")
            results["memory"] = {"baseline": base, "expected": expected, "sampled": got,
                                 "deviation_pct": dev_pct, "samples": len(during)}
        else:
            print("memory: not enough samples", len(before), len(during))

    section("PCIe fallback: nvmlDeviceGetPcieThroughput in parallel threads")
    ref = Reference(h)
    ref.thread.start()
    b = NvmlBackend(nv, pcie_method="throughput")
    print("backend:", b.describe())
    phases = copy_phases(args.phase_s, [10 * GB, None])
    proc, lines, done = start_load(phases)
    events, cpu, wall = await sample_while(b, None, until=done)
    proc.wait()
    ref.halt.set()
    rows = analyse_pcie(events, [x for x in lines if x.get("event") == "phase"], ref, "throughput")
    print(f"fallback sampler CPU under load: {cpu / wall * 100:.3f}% of one core (excludes the "
          "short-lived call threads)")
    results["pcie_throughput"] = rows
    nv.nvmlShutdown()
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--phase-s", type=float, default=6.0)
    ap.add_argument("--idle-s", type=float, default=20.0)
    args = ap.parse_args()
    results = asyncio.run(main_async(args))
    section("tuiapp gpus / tuiapp gpus --json")
    for extra in ([], ["--json"]):
        r = subprocess.run([sys.executable, "-m", "tuiapp", "gpus", *extra], capture_output=True,
                           text=True, timeout=60)
        print(r.stdout + r.stderr + f"(exit {r.returncode})")
    with open(os.path.join(args.out, "telemetry_h200.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
