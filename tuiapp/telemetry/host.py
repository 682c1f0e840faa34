"""Host CPU and memory, and the server process tree's resident memory, through psutil."""

from __future__ import annotations

import asyncio
import threading

import psutil

from tuiapp.events import HostSample
from tuiapp.server.proctree import Descendants
from tuiapp.telemetry.sampler import Publish, _Loop


def tree_rss_bytes(pid: int, descendants: Descendants | None = None) -> int | None:
    """RSS of a process and all its descendants (SGLang: one scheduler process per rank).
    ``descendants``: the tree kept from call to call (so an unchanged tree is not walked)."""
    try:
        total = psutil.Process(pid).memory_info().rss
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    for child in (descendants or Descendants(pid)).pids():
        try:
            total += psutil.Process(child).memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # a child that exited between listing and reading
    return total


def host_sample(server_pid: int | None, descendants: Descendants | None = None) -> HostSample:
    vm = psutil.virtual_memory()
    return HostSample(
        cpu_pct=psutil.cpu_percent(interval=None),
        mem_used_bytes=int(vm.total - vm.available),
        mem_total_bytes=int(vm.total),
        server_rss_bytes=tree_rss_bytes(server_pid, descendants) if server_pid else None,
    )


async def run_host_sampler(publish: Publish, *, server_pid: int | None = None,
                           interval_s: float = 1.0, stop: asyncio.Event | None = None) -> None:
    """Publish a HostSample every ``interval_s`` (from a daemon thread: walking /proc for a
    big process tree can take milliseconds) until ``stop`` is set or the task is cancelled."""
    halt = threading.Event()
    primed = []
    tree = Descendants(server_pid) if server_pid else None

    def tick() -> None:
        if not primed:  # cpu_percent's first call measures nothing: prime, publish next tick
            psutil.cpu_percent(interval=None)
            primed.append(True)
            return
        try:
            publish(host_sample(server_pid, tree))
        except Exception:
            pass  # psutil hiccups (a vanished /proc entry) skip one tick

    loop = _Loop("host-sample", tick, interval_s, halt)
    loop.thread.start()
    try:
        # nothing to do here but wait: no wake-ups until stopped or cancelled
        await (stop.wait() if stop is not None else asyncio.get_running_loop().create_future())
    finally:
        halt.set()
