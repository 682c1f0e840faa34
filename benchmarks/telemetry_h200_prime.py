"""Does a cheaper NVML call just before the PCIe-counter read make the read cheaper (H200)?

    python benchmarks/telemetry_h200_prime.py

A counter read 48-58 ms after the previous one costs ~0.85 ms of CPU, back to back ~0.31 ms
(telemetry_h200_cadence.py). This prints the CPU per (prime + read) pair, 58 ms apart, for
several primes, and for reading one field vs both.
"""

from __future__ import annotations

import time

import pynvml as nv

FIELDS = [197, 198]


def cost(fn, n: int = 80, gap_s: float = 0.058) -> float:
    total = 0.0
    for _ in range(n):
        time.sleep(gap_s)
        c0 = time.thread_time()
        fn()
        total += time.thread_time() - c0
    return total / n * 1e6


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)

    def read():
        return nv.nvmlDeviceGetFieldValues(h, FIELDS)

    primes = {
        "none": lambda: None,
        "link width": lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h),
        "link gen": lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h),
        "power": lambda: nv.nvmlDeviceGetPowerUsage(h),
        "memory v2": lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2),
        "replay counter": lambda: nv.nvmlDeviceGetPcieReplayCounter(h),
        "field 197 alone": lambda: nv.nvmlDeviceGetFieldValues(h, [197]),
        "field 94 (replay)": lambda: nv.nvmlDeviceGetFieldValues(h, [94]),
    }
    for rnd in range(2):
        for name, prime in primes.items():
            both = cost(lambda p=prime: (p(), read()))
            alone = cost(prime) if name != "none" else 0.0
            print(f"round {rnd} prime {name:<18} prime alone {alone:7.0f} us   prime+read {both:7.0f} us",
                  flush=True)
    print(f"fields 197+198+94 in one call: {cost(lambda: nv.nvmlDeviceGetFieldValues(h, [197, 198, 94])):.0f} us")
    print(f"field 198 only: {cost(lambda: nv.nvmlDeviceGetFieldValues(h, [198])):.0f} us")
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
