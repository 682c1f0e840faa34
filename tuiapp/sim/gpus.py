"""The modelled GPUs behind ``GET /sim/gpus``: memory, PCIe byte counters, util, power, temp.

Quantities are piecewise: memory ramps linearly between two values over a stage (weight
loading, KV allocation, graph capture); PCIe counters integrate a rate that the startup
stages and the scheduler set (folded into the running total whenever the rate changes, so
a read at any time is exact and monotonic); temperature follows power with a 20 s
first-order lag. Idle links down-train to Gen1 after 1 s without activity, as real
GPUs do; ``pcie_gen_max`` stays 5.
"""

from __future__ import annotations

import math
import time
import uuid

from tuiapp.sim import model

IDLE_POWER_W = 34.0
LOADED_IDLE_POWER_W = 78.0
TEMP_TAU_S = 20.0
IDLE_CLOCK_MHZ = 180
ACTIVE_CLOCK_MHZ = 2430


class Gpu:
    def __init__(self, index: int, seed: int):
        self.index = index
        self.uuid = "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_OID, f"tuiapp-sim-{seed}-{index}"))
        # small per-board differences so eight GPUs do not draw identical lines
        self.power_skew = 1.0 + 0.03 * math.sin(1.7 * index + seed)
        self.temp_skew_c = 2.0 * math.cos(1.3 * index + seed)
        self.mem_from = self.mem_to = 0.0
        self.mem_t0 = self.mem_t1 = 0.0
        self.tx_total = self.rx_total = 0.0
        self.tx_rate = self.rx_rate = float(model.IDLE_BYTES_PER_S)
        self.rate_t0 = time.monotonic()
        self.rx_ramp_bytes, self.rx_ramp_t0, self.rx_ramp_t1 = 0.0, 0.0, 0.0
        self.util_pct = 0
        self.power_w = IDLE_POWER_W
        self.active = False
        self.last_active_t = -1e9
        self.temp_c = 31.0 + self.temp_skew_c
        self.temp_t = self.rate_t0

    # ------------------------------------------------------------ setters (now = monotonic)
    def mem_ramp(self, now: float, to_bytes: float, over_s: float) -> None:
        self.mem_from = self.mem_at(now)
        self.mem_to = to_bytes
        self.mem_t0, self.mem_t1 = now, now + max(over_s, 0.0)

    def rx_ramp(self, now: float, nbytes: float, over_s: float) -> None:
        """``nbytes`` received evenly over the next ``over_s`` (exact, whatever the timers do),
        never faster than the link can carry beside the steady traffic (a Gen5 x16 link
        carries ~63 GB/s of payload a direction, both together)."""
        link = model.PCIE_LINK_BYTES_PER_S
        over_s = max(over_s, nbytes / max(link - self.rx_rate, 0.1 * link))
        self.rx_total += self._ramp_done(now)
        self.rx_ramp_bytes, self.rx_ramp_t0, self.rx_ramp_t1 = nbytes, now, now + max(over_s, 1e-9)
        if self.rx_rate + self._ramp_rate(now) > link:  # the steady traffic yields the rest
            self.set_rates(now, self.tx_rate, link - self._ramp_rate(now))

    def _ramp_rate(self, now: float) -> float:
        """Bytes a second the weight ramp adds now."""
        if not self.rx_ramp_t0 <= now < self.rx_ramp_t1:
            return 0.0
        return self.rx_ramp_bytes / (self.rx_ramp_t1 - self.rx_ramp_t0)

    def _ramp_done(self, now: float) -> float:
        frac = (now - self.rx_ramp_t0) / (self.rx_ramp_t1 - self.rx_ramp_t0) if self.rx_ramp_t1 > self.rx_ramp_t0 else 1.0
        return self.rx_ramp_bytes * min(max(frac, 0.0), 1.0)

    def set_rates(self, now: float, tx_bps: float, rx_bps: float) -> None:
        link = model.PCIE_LINK_BYTES_PER_S  # what the scheduler asks for, within the link
        tx_bps = min(tx_bps, link)
        rx_bps = min(rx_bps, max(0.0, link - self._ramp_rate(now)))
        dt = now - self.rate_t0
        self.tx_total += self.tx_rate * dt
        self.rx_total += self.rx_rate * dt
        self.tx_rate, self.rx_rate, self.rate_t0 = tx_bps, rx_bps, now

    def set_load(self, now: float, util_pct: int, power_w: float, active: bool) -> None:
        self._fold_temp(now)
        if self.active and not active:
            self.last_active_t = now
        self.util_pct, self.power_w, self.active = util_pct, power_w * self.power_skew, active
        if active:
            self.last_active_t = now

    # ------------------------------------------------------------ readers
    def mem_at(self, now: float) -> float:
        if now >= self.mem_t1 or self.mem_t1 <= self.mem_t0:
            return self.mem_to
        frac = (now - self.mem_t0) / (self.mem_t1 - self.mem_t0)
        return self.mem_from + (self.mem_to - self.mem_from) * max(frac, 0.0)

    def _fold_temp(self, now: float) -> None:
        target = 26.0 + 0.09 * self.power_w + self.temp_skew_c
        dt = max(now - self.temp_t, 0.0)
        self.temp_c += (target - self.temp_c) * (1.0 - math.exp(-dt / TEMP_TAU_S))
        self.temp_t = now

    def snapshot(self, now: float) -> dict:
        self._fold_temp(now)
        dt = now - self.rate_t0
        linked = self.active or now - self.last_active_t < 1.0
        return {
            "index": self.index,
            "uuid": self.uuid,
            "name": model.GPU_NAME,
            "mem_total_bytes": model.GPU_MEM_TOTAL_BYTES,
            "mem_used_bytes": int(self.mem_at(now)),
            "mem_reserved_bytes": model.GPU_MEM_RESERVED_BYTES,
            "util_pct": int(self.util_pct),
            "power_w": round(self.power_w, 1),
            "power_limit_w": model.GPU_POWER_LIMIT_W,
            "temp_c": int(round(self.temp_c)),
            "sm_clock_mhz": ACTIVE_CLOCK_MHZ if self.util_pct > 0 else IDLE_CLOCK_MHZ,
            "pcie_gen": model.PCIE_GEN if linked else 1,
            "pcie_width": model.PCIE_WIDTH,
            "pcie_gen_max": model.PCIE_GEN,
            "pcie_width_max": model.PCIE_WIDTH,
            "pcie_tx_bytes_total": int(self.tx_total + self.tx_rate * dt),
            "pcie_rx_bytes_total": int(self.rx_total + self.rx_rate * dt + self._ramp_done(now)),
        }


class GpuFarm:
    def __init__(self, n_gpus: int, seed: int = 0):
        self.gpus = [Gpu(i, seed) for i in range(n_gpus)]

    def select(self, indices) -> list[Gpu]:
        return [self.gpus[i] for i in indices if i < len(self.gpus)]

    def snapshot(self) -> dict:
        now = time.monotonic()
        return {"t_s": time.time(), "gpus": [g.snapshot(now) for g in self.gpus]}
