"""Which exceptions mean a process stopped rather than failed: one rule for every layer that reads
an exception line (the families, the generic layer, the last resort)."""

from __future__ import annotations

import re

# an interrupt, a cancelled task, a generator closed: someone asked it to stop
_STOPS = frozenset({"KeyboardInterrupt", "CancelledError", "GeneratorExit", "StopIteration", "StopAsyncIteration"})
# the classes that may mean "stopped", whose line is often printed without a message
EXIT_NAMES = _STOPS | {"SystemExit"}
# "SystemExit", "SystemExit: 0", "SystemExit: None": a clean exit; "SystemExit: 1", "SystemExit: bad
# config" is a process that gave up (sys.exit(1), exit("...")), a failure like any other
_CLEAN_EXIT_RE = re.compile(r"SystemExit(?::\s*(?:0|None)?)?\s*$")


def stops_quietly(name: str, line: str = "") -> bool:
    """True for the exception ``name`` (as printed, maybe dotted) when it only means "stopped":
    an interrupt or a cancellation, a warning class, or a SystemExit with a clean code. ``line`` is
    the exception line, which says a SystemExit's code."""
    short = name.rsplit(".", 1)[-1]
    if short in _STOPS or short.endswith("Warning"):
        return True
    if short == "SystemExit":
        at = line.find("SystemExit")
        return at < 0 or _CLEAN_EXIT_RE.match(line, at) is not None
    return False
