"""GPUs on other nodes, read from dcgm-exporter's Prometheus endpoint(s).

dcgm-exporter serves ``/metrics`` (port 9400 by default) with one sample per GPU per field,
labelled ``gpu``, ``UUID``, ``modelName``, ``Hostname``. FB_* values are MiB;
DCGM_FI_PROF_PCIE_{TX,RX}_BYTES and DCGM_FI_PROF_NVLINK_{TX,RX}_BYTES are already rates in
bytes/s (profiling fields; absent where DCGM's profiling module is not loaded, then n/a).
The exporter refreshes its values every collect interval (30 s by default), so these GPUs
move more slowly than local NVML ones.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tuiapp.common.http_clients import sync_client
from tuiapp.common.net_errors import cause
from tuiapp.events import Alert, GpuSample, Note, _Event
from tuiapp.telemetry.backend import Backend, call_in_threads

MIB = 1 << 20
# DCGM marks missing values with "blank" sentinels: int64 >= 0x7ffffffffffffff0 and
# fp64 >= 2**47 (dcgm_fields.h DCGM_INT64_BLANK / DCGM_FP64_BLANK)
_BLANK_FLOOR = float(2**47)

_FIELDS = {
    "DCGM_FI_DEV_FB_USED": "fb_used",
    "DCGM_FI_DEV_FB_FREE": "fb_free",
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved",
    "DCGM_FI_DEV_FB_TOTAL": "fb_total",
    "DCGM_FI_DEV_GPU_UTIL": "util",
    "DCGM_FI_DEV_POWER_USAGE": "power",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit",
    "DCGM_FI_DEV_GPU_TEMP": "temp",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "pcie_tx",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "pcie_rx",
    "DCGM_FI_PROF_NVLINK_TX_BYTES": "nvlink_tx",
    "DCGM_FI_PROF_NVLINK_RX_BYTES": "nvlink_rx",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "replay",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "reasons",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "reasons",
    "DCGM_FI_DEV_PCIE_LINK_GEN": "gen",
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": "width",
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": "gen_max",
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": "width_max",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
}


def metrics_url(url: str) -> str:
    """``host:9400`` or ``http://host:9400`` -> ``http://host:9400/metrics``."""
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    return url if parts.path not in ("", "/") else url.rstrip("/") + "/metrics"


def _value(v: float | None) -> float | None:
    if v is None or v != v or v >= _BLANK_FLOOR:  # NaN or DCGM blank
        return None
    return v


def _int(v: float | None) -> int | None:
    v = _value(v)
    return None if v is None else int(v)


def parse_exporter_text(text: str, default_node: str | None = None) -> list[dict[str, Any]]:
    """One dict per whole GPU: labels (index, uuid, name, node) and the known fields.

    MIG-instance rows (labels GPU_I_ID) are skipped: the GPU-level row carries the totals.
    """
    gpus: dict[tuple[str | None, int], dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            # the parser renames a counter's samples NAME_total; dcgm-exporter's are plain NAME
            name = family.name if s.name == family.name + "_total" else s.name
            key = _FIELDS.get(name)
            if key is None or "gpu" not in s.labels or s.labels.get("GPU_I_ID"):
                continue
            node = s.labels.get("Hostname") or default_node
            try:
                index = int(s.labels["gpu"])
            except ValueError:
                continue
            g = gpus.setdefault((node, index), {
                "index": index, "node": node, "uuid": s.labels.get("UUID"),
                "name": s.labels.get("modelName"),
            })
            g[key] = _value(float(s.value))
    return [gpus[k] for k in sorted(gpus, key=lambda k: (k[0] or "", k[1]))]


def to_sample(g: dict[str, Any]) -> GpuSample:
    used, free, reserved = g.get("fb_used"), g.get("fb_free"), g.get("fb_reserved")
    total = g.get("fb_total")
    if total is None and used is not None and free is not None:
        total = used + free + (reserved or 0)
    has_pcie = g.get("pcie_tx") is not None or g.get("pcie_rx") is not None
    return GpuSample(
        index=g["index"], uuid=g.get("uuid"), name=g.get("name"), node=g.get("node"),
        mem_used_bytes=None if used is None else int(used * MIB),
        mem_reserved_bytes=None if reserved is None else int(reserved * MIB),
        mem_total_bytes=None if total is None else int(total * MIB),
        util_pct=g.get("util"),
        pcie_tx_bytes_s=g.get("pcie_tx"), pcie_rx_bytes_s=g.get("pcie_rx"),
        pcie_method="dcgm" if has_pcie else None,
        pcie_gen=_int(g.get("gen")), pcie_width=_int(g.get("width")),
        pcie_gen_max=_int(g.get("gen_max")), pcie_width_max=_int(g.get("width_max")),
        pcie_replay_count=_int(g.get("replay")),
        nvlink_tx_bytes_s=g.get("nvlink_tx"), nvlink_rx_bytes_s=g.get("nvlink_rx"),
        power_w=g.get("power"), power_limit_w=g.get("power_limit"), temp_c=g.get("temp"),
        sm_clock_mhz=_int(g.get("sm_clock")), clock_event_reasons=_int(g.get("reasons")),
    )


class DcgmBackend(Backend):
    name = "dcgm"

    def __init__(self, urls: list[str], *, timeout_s: float = 2.0,
                 client: httpx.Client | None = None) -> None:
        self.urls = [metrics_url(u) for u in urls]
        self.timeout_s = timeout_s
        # one client for every exporter; an SSL context only once one of them needs it
        self._client = client or sync_client(self.urls[0] if self.urls else "", timeout=timeout_s)
        self._known: dict[str, list[GpuSample]] = {}  # last GPUs seen per URL
        self._up: dict[str, bool] = {}
        self._last_xid: dict[tuple[str | None, int], int] = {}

    def _fetch(self, url: str) -> str:
        resp = self._client.get(url)
        resp.raise_for_status()
        return resp.text

    def sample(self) -> list[_Event]:
        texts = call_in_threads([lambda u=u: self._fetch(u) for u in self.urls],
                                timeout_s=self.timeout_s + 0.5)
        out: list[_Event] = []
        for url, text in zip(self.urls, texts, strict=True):
            node = urlsplit(url).hostname
            gpus = None
            if isinstance(text, str):
                try:
                    gpus = parse_exporter_text(text, default_node=node)
                except ValueError as exc:  # not Prometheus text
                    text = exc
            up = gpus is not None
            if self._up.get(url) != up:
                self._up[url] = up
                if up:
                    out.append(Note(source="dcgm", text=f"telemetry: {len(gpus)} GPU(s) from {url}"))
                else:
                    why = cause(text) if isinstance(text, BaseException) else "timeout"
                    out.append(Note(level="warning", source="dcgm",
                                    text=f"dcgm source {url} unreachable ({why}); its GPUs show n/a"))
            if gpus is None:
                # GPUs seen before stay listed, values unknown: better than stale numbers
                out.extend(GpuSample(index=s.index, uuid=s.uuid, name=s.name, node=s.node)
                           for s in self._known.get(url, []))
                continue
            samples = [to_sample(g) for g in gpus]
            self._known[url] = samples
            out.extend(self._xid_alerts(gpus))
            out.extend(samples)
        return out

    def _xid_alerts(self, gpus: list[dict[str, Any]]) -> list[Alert]:
        """DCGM_FI_DEV_XID_ERRORS holds the last Xid seen; a change is a new one (the value at
        first sight may be old, so it only sets the baseline)."""
        alerts = []
        for g in gpus:
            xid = _int(g.get("xid"))
            if xid is None:
                continue
            key = (g.get("node"), g["index"])
            before = self._last_xid.get(key)
            self._last_xid[key] = xid
            if before is not None and xid != before and xid != 0:
                alerts.append(Alert(alert_kind="xid", source="dcgm",
                                    message=f"{g.get('node') or '?'} GPU {g['index']}: Xid {xid}"))
        return alerts

    def close(self) -> None:
        self._client.close()
