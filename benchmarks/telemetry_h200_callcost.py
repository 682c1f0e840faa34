"""On the H200 (device tool): CPU per PCIe-counter read, pynvml wrapper vs a prepared raw
ctypes call, at several spacings, to see where the poll thread's CPU goes.

Run: python benchmarks/telemetry_h200_callcost.py
"""

from __future__ import annotations

import ctypes
import time

import pynvml as nv

FIELDS = [197, 198]


def pynvml_read(h):
    return nv.nvmlDeviceGetFieldValues(h, FIELDS)


def make_raw(h):
    fn = nv._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")
    arr = (nv.c_nvmlFieldValue_t * 2)()
    arr[0].fieldId, arr[1].fieldId = FIELDS
    n = ctypes.c_int(2)

    def read():
        ret = fn(h, n, arr)
        return ret, arr[0].value.uiVal, arr[1].value.uiVal

    return read


def measure(read, spacing_s: float, seconds: float = 4.0) -> tuple[float, int]:
    calls = 0
    cpu0 = time.thread_time()
    end = time.monotonic() + seconds
    next_t = time.monotonic()
    while time.monotonic() < end:
        read()
        calls += 1
        if spacing_s:
            next_t += spacing_s
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    return (time.thread_time() - cpu0) / calls * 1e6, calls


def main() -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    raw = make_raw(h)
    print("method  spacing_ms  cpu_us_per_call  calls  cpu_pct_at_that_rate")
    for spacing in (0.0, 0.005, 0.02, 0.048):
        for name, read in (("pynvml", lambda: pynvml_read(h)), ("raw", raw)):
            us, calls = measure(read, spacing)
            rate = (1 / spacing) if spacing else calls / 4.0
            print(f"{name:7s} {spacing * 1e3:10.0f} {us:16.1f} {calls:6d} {us * rate / 1e4:10.3f}%")
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
