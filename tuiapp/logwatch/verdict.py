"""The worst failure in a finished piece of output (a failed ``--help``, say), read by the same
watcher that reads a server's log: ``(kind, line)`` or None."""

from __future__ import annotations

from tuiapp.logwatch.families import PRIORITY
from tuiapp.logwatch.watcher import LogWatcher


def worst_failure(text: str) -> tuple[str, str] | None:
    watcher = LogWatcher(lambda _event: None, log_lines=False)
    watcher.feed(text.encode("utf-8", "replace"), now_s=0.0)
    watcher.flush(now_s=0.0)
    order = {kind: n for n, kind in enumerate(PRIORITY)}
    found = [i for i in watcher.incidents if i.severity == "error"]
    worst = min(found, key=lambda i: order.get(i.kind, len(order)), default=None)
    return None if worst is None else (worst.kind, worst.message)
