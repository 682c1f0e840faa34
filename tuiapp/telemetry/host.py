"""Host CPU and memory, and the server process tree's resident memory, through psutil."""

from __future__ import annotations

import asyncio

import psutil

from tuiapp.common.ticks import next_tick_s, wait_stop
from tuiapp.events import HostSample
from tuiapp.server.proctree import Descendants
from tuiapp.telemetry.sampler import Publish


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
    """Publish a HostSample every ``interval_s`` until ``stop`` is set or the task is cancelled.

    On the event loop, not a thread: a sample reads a few /proc files (the server's tree is
    kept from tick to tick, so an unchanged one is not walked), well under a millisecond,
    and a thread cost two wake-ups a second (its own and the loop's for each sample)."""
    psutil.cpu_percent(interval=None)  # the first call measures nothing: prime it
    tree = Descendants(server_pid) if server_pid else None
    loop = asyncio.get_running_loop()
    next_s = next_tick_s(loop.time(), interval_s)  # on the grid: it shares the GPU sampler's wake
    while stop is None or not stop.is_set():
        if await wait_stop(stop, max(next_s - loop.time(), 0.0)):
            break
        try:
            publish(host_sample(server_pid, tree))
        except Exception:
            pass  # psutil hiccups (a vanished /proc entry) skip one tick
        next_s = next_tick_s(loop.time(), interval_s)  # late: skip, never burst

