"""Keep Python's cyclic garbage collector off what start-up builds.

Start-up makes a few hundred thousand long-lived objects (modules, pydantic schemas,
Textual's DOM, CSS and caches) and nearly no cyclic garbage. The collector still walks them
all: during start-up at every full collection, and later at each one the frames' churn sets
off (~100 ms each on the 2-core box; a dashboard running a minute spent 0.37 s of its 3 s of
CPU collecting). So the collector waits while tuiapp starts, and then the survivors are
frozen: moved where it never looks. What is freed by reference counting (nearly everything)
is freed as before; a cycle that start-up left behind stays, once, and is small.
"""

from __future__ import annotations

import gc
import threading

#: when to freeze: once the app is up (the first frame, the session's sources started), and
#: again once the first trial runs (its modules are imported lazily, its caches are filled)
SETTLE_AT_S = (2.0, 12.0)


def settle_heap_after_start(at_s: tuple[float, ...] = SETTLE_AT_S) -> threading.Thread:
    """Pause the collector now; freeze what exists (and resume it) at each of ``at_s``."""
    gc.disable()
    thread = threading.Thread(target=_settle, args=(tuple(sorted(at_s)),), name="gc-settle", daemon=True)
    thread.start()
    return thread


def _settle(at_s: tuple[float, ...]) -> None:
    stop = threading.Event()
    waited_s = 0.0
    for t_s in at_s:
        stop.wait(t_s - waited_s)  # an Event's wait: one wake-up, unlike a polling loop
        waited_s = t_s
        gc.freeze()
        gc.enable()
