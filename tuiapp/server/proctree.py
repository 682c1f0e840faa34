"""The processes a launched server consists of, and how to signal all of them.

The server runs in its own session, so its process group id is its pid and one
``killpg`` reaches every rank it forks. A descendant may leave the group (``setsid``,
e.g. a helper daemon); those are found by walking the process tree with psutil while
the server is alive (:meth:`ProcessTree.snapshot`, called periodically) and are signalled
one by one. Zombies count as gone: they hold no GPU memory and no port, and PID 1 in a
container may never reap them.
"""

from __future__ import annotations

import os
import signal

import psutil


class ProcessTree:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pgid = pid  # start_new_session=True makes the server its group's leader
        self._known: dict[int, float] = {}  # descendant pid -> create_time (guards pid reuse)

    def snapshot(self) -> None:
        """Remember the server's current descendants (only possible while it is alive)."""
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        for child in children:
            try:
                self._known.setdefault(child.pid, child.create_time())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass

    def _known_alive(self) -> list[psutil.Process]:
        alive = []
        for pid, created in list(self._known.items()):
            try:
                proc = psutil.Process(pid)
                if proc.create_time() != created or proc.status() == psutil.STATUS_ZOMBIE:
                    del self._known[pid]
                    continue
                alive.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                self._known.pop(pid, None)
        return alive

    def _group_alive(self) -> list[int]:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return []  # the fast, common answer once everything has exited
        except PermissionError:
            pass
        members = []
        for pid in psutil.pids():
            try:
                if os.getpgid(pid) != self.pgid:
                    continue
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    members.append(pid)
            except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return members

    def alive(self) -> list[int]:
        """Pids of the server's processes still running (group members and known descendants)."""
        pids = set(self._group_alive())
        pids.update(p.pid for p in self._known_alive())
        return sorted(pids)

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the whole group and to known descendants that left it."""
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for proc in self._known_alive():
            try:
                pgid = os.getpgid(proc.pid)
                if pgid == self.pgid:
                    continue  # the killpg above reached it
                if pgid == proc.pid:
                    os.killpg(pgid, sig)  # it made its own group: take its children along
                else:
                    proc.send_signal(sig)
            except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
                pass
