"""GPU and host telemetry sources.

Public API:

- :func:`open_backend` picks a GPU backend (NVML, simulator, dcgm-exporter) and says in one
  line what it got, or why telemetry is off.
- :func:`run_gpu_sampler` / :func:`run_host_sampler`: source coroutines publishing
  GpuSample / HostSample (plus Alert and Note) events; all blocking work runs in daemon
  threads.
- :func:`take_snapshot`: two samples an interval apart, for ``tuiapp gpus``.
"""

from __future__ import annotations

from tuiapp.telemetry.backend import Backend, MultiBackend
from tuiapp.telemetry.host import run_host_sampler
from tuiapp.telemetry.sampler import run_gpu_sampler, take_snapshot

__all__ = ["Backend", "MultiBackend", "open_backend", "open_nvml", "run_gpu_sampler",
           "run_host_sampler", "run_telemetry", "take_snapshot"]

KINDS = ("auto", "nvml", "sim", "dcgm")

# NVML error codes that mean "no usable driver / GPU here"
_NVML_OFF_REASONS = {
    9: "NVIDIA driver not loaded",
    12: "no NVIDIA driver",
    18: "driver/library version mismatch",
    28: "no NVIDIA GPU found",
}


PCIE_POLL_ENV = "TUIAPP_PCIE_POLL"  # "adaptive" (default) or "fixed": see counters.Cadence


def open_nvml(**kwargs: object) -> tuple[Backend | None, str]:
    """The NVML backend, or None and why not (never raises for a missing driver)."""
    import os

    from tuiapp.telemetry import nvml_backend

    poll = os.environ.get(PCIE_POLL_ENV, "").strip().lower() or "adaptive"
    if poll not in ("adaptive", "fixed"):
        return None, (f"telemetry off: {PCIE_POLL_ENV} must be 'adaptive' or 'fixed', "
                      f"not {os.environ[PCIE_POLL_ENV]!r}")
    kwargs.setdefault("pcie_poll", poll)

    try:
        nv = nvml_backend.load_pynvml()
    except ImportError:
        return None, "telemetry off: NVML not available (nvidia-ml-py not installed)"
    try:
        backend = nvml_backend.NvmlBackend(nv, **kwargs)
    except Exception as exc:
        code = nvml_backend.nvml_error_code(exc)
        reason = _NVML_OFF_REASONS.get(code) if isinstance(code, int) else None
        return None, f"telemetry off: NVML not available ({reason or f'{type(exc).__name__}: {exc}'})"
    if not backend.gpus:
        backend.close()
        return None, "telemetry off: NVML found no NVIDIA GPU"
    return backend, backend.describe()


def open_backend(kind: str = "auto", *, sim_url: str | None = None, n_sim_gpus: int = 8,
                 dcgm_urls: list[str] | None = None, sim_client=None) -> tuple[Backend | None, str]:
    """A GPU backend, or None, plus a one-line note for the user.

    kind: "nvml"; "sim" (needs ``sim_url``); "dcgm" (needs ``dcgm_urls``); "auto": NVML if
    it initialises, else None, together with the dcgm-exporter sources when ``dcgm_urls``
    is given (a remote GPU that is also local is shown once, from NVML). ``sim_client``: the
    session's sync httpx client of the simulator, shared instead of a client of its own.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown telemetry kind {kind!r} (one of {', '.join(KINDS)})")
    if kind == "sim":
        if not sim_url:
            return None, "telemetry off: no simulator URL"
        from tuiapp.telemetry.sim_backend import SimBackend

        return (SimBackend(sim_url, n_sim_gpus, client=sim_client),
                f"telemetry: {n_sim_gpus} simulated GPUs from {sim_url}")
    dcgm = None
    if dcgm_urls:
        from tuiapp.telemetry.dcgm_backend import DcgmBackend

        dcgm = DcgmBackend(dcgm_urls)
    if kind == "dcgm":
        if dcgm is None:
            return None, "telemetry off: no dcgm-exporter URL"
        return dcgm, f"telemetry: dcgm-exporter at {', '.join(dcgm.urls)}"
    nvml, note = open_nvml()
    if dcgm is None:
        return nvml, note
    if nvml is None:
        return dcgm, f"{note}; dcgm-exporter at {', '.join(dcgm.urls)}"
    return MultiBackend([nvml, dcgm]), f"{note}; plus dcgm-exporter at {', '.join(dcgm.urls)}"


async def run_telemetry(publish, kind: str = "auto", *, sim_url: str | None = None,
                        dcgm_urls: list[str] | None = None, interval_s: float = 1.0,
                        stop=None, sim_client=None, next_interval_s=None) -> None:
    """A session source: open the backend ``kind`` names (off the event loop: NVML start-up
    blocks), say in one Note what telemetry there is, then sample until stopped."""
    import asyncio

    from tuiapp.events import Note

    if kind == "off":
        return
    try:
        backend, note = await asyncio.to_thread(open_backend, kind, sim_url=sim_url, dcgm_urls=dcgm_urls,
                                                sim_client=sim_client)
    except Exception as exc:  # noqa: BLE001 - no driver or a bad source: say so, run the rest
        backend, note = None, f"telemetry off: {exc}"
    if note:
        publish(Note(level="info" if backend else "warning", text=note, source="telemetry"))
    await run_gpu_sampler(publish, backend, interval_s=interval_s, stop=stop, next_interval_s=next_interval_s)
