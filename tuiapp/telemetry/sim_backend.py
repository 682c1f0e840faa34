"""The simulator's GPUs, read from ``GET {sim_url}/sim/gpus``.

The simulator keeps cumulative PCIe byte counters, like the hardware; rates are deltas over
the simulator's own clock ``t_s`` (so a sped-up simulation shows simulated bytes per
simulated second). When the endpoint cannot be reached (server not started, between two
trials, or dead) the GPUs still exist but nothing reads them: their rows carry the static
facts (name, total memory, link) and n/a for every reading, never a made-up 0.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from tuiapp.common.http_clients import sync_client
from tuiapp.events import GpuSample, Note, _Event
from tuiapp.telemetry.backend import Backend

_STATIC = ("uuid", "name", "mem_total_bytes", "pcie_gen_max", "pcie_width_max")
# what a GpuSample takes from the simulator's GPU as it is (rates are ours: from its counters)
_READINGS = frozenset({"uuid", "name", "mem_used_bytes", "mem_reserved_bytes", "mem_total_bytes", "util_pct",
                       "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max", "power_w", "power_limit_w", "temp_c",
                       "sm_clock_mhz"})


class SimBackend(Backend):
    name = "sim"

    def __init__(self, sim_url: str, n_gpus: int = 8, *, timeout_s: float = 0.5,
                 client: httpx.Client | None = None) -> None:
        self.url = sim_url.rstrip("/") + "/sim/gpus"
        self.n_gpus = n_gpus
        # ``client``: the session's client of this server, shared (so not ours to close)
        self._owns_client = client is None
        self._timeout_s = timeout_s
        self._client = client or sync_client(sim_url, timeout=timeout_s)
        self._static: dict[int, dict[str, Any]] = {}
        self._prev: dict[int, tuple[float, int, int]] = {}
        self._reachable: bool | None = None

    @property
    def reachable(self) -> bool:
        """Whether the last sample read the simulator (its n/a stand-ins are not readings)."""
        return bool(self._reachable)

    def fetch(self) -> dict[str, Any] | None:
        try:
            resp = self._client.get(self.url, timeout=self._timeout_s)
            resp.raise_for_status()
            data = resp.json()
            if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
                return None
            return data
        except (httpx.HTTPError, ValueError):
            return None

    def loop_client(self) -> httpx.AsyncClient | None:
        """The session's async client when we were given one: the sampler then samples on
        the event loop (a timer and a response) instead of in a thread that hands each
        request to the loop and waits (five wake-ups a sample)."""
        aio = getattr(self._client, "aio", None)
        return aio if isinstance(aio, httpx.AsyncClient) else None

    async def sample_async(self) -> list[_Event]:
        client = self.loop_client()
        if client is None:
            raise RuntimeError("sample_async needs the session's async client")
        try:
            resp = await client.get(self.url, timeout=self._timeout_s)
            resp.raise_for_status()
            data = orjson.loads(resp.content)  # ~5x httpx's json() (stdlib) on every sample
            if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
                data = None
        except (httpx.HTTPError, ValueError):
            data = None
        return self._events(data)

    def sample(self) -> list[_Event]:
        return self._events(self.fetch())

    def _events(self, data: dict[str, Any] | None) -> list[_Event]:
        out: list[_Event] = []
        reachable = data is not None
        if reachable != self._reachable:
            # open_backend's note already said where the GPUs come from: speak on changes
            # after first contact (a server still starting is not news)
            if reachable and self._reachable is False:
                out.append(Note(text=f"simulated GPUs: {self.url} reachable again", source="sim"))
            elif not reachable and self._reachable:
                # every trial's server stops at its end: news, not a warning (a crash is
                # the launcher's to report, with its exit code and log)
                out.append(Note(level="info", source="sim",
                                text=f"simulated GPUs: {self.url} not answering (server stopped?); readings n/a"))
            if reachable or self._reachable:
                self._reachable = reachable
        if data is None:
            self._prev.clear()  # a restarted simulator starts its counters again
            out.extend(self._idle(i) for i in self._indices())
            return out
        t_s = float(data.get("t_s", 0.0))
        for g in data["gpus"]:
            out.append(self._from_model(g, t_s))
        return out

    def _indices(self) -> list[int]:
        return sorted(self._static) if self._static else list(range(self.n_gpus))

    def _idle(self, index: int) -> GpuSample:
        static = self._static.get(index, {})
        return GpuSample(index=index, pcie_method="sim", **{k: static.get(k) for k in _STATIC})

    def _from_model(self, g: dict[str, Any], t_s: float) -> GpuSample:
        index = int(g["index"])
        self._static[index] = {k: g.get(k) for k in _STATIC}
        tx_total = int(g.get("pcie_tx_bytes_total") or 0)
        rx_total = int(g.get("pcie_rx_bytes_total") or 0)
        tx = rx = None
        prev = self._prev.get(index)
        if prev is not None and t_s > prev[0] and tx_total >= prev[1] and rx_total >= prev[2]:
            tx = (tx_total - prev[1]) / (t_s - prev[0])
            rx = (rx_total - prev[2]) / (t_s - prev[0])
        self._prev[index] = (t_s, tx_total, rx_total)
        # The simulator names its readings as GpuSample does: validated from the dict as it
        # comes (a third of a sample's CPU went to picking 14 keys out one by one)
        fields = {k: v for k, v in g.items() if k in _READINGS}
        fields.update(index=index, pcie_tx_bytes_s=tx, pcie_rx_bytes_s=rx, pcie_method="sim")
        return GpuSample.model_validate(fields)

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
