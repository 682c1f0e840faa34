"""A Python thread dump in a log, whoever printed it: py-spy's (SGLang's watchdog dumps a stuck
scheduler with it: ``Pyspy dump for PID 499:``, then ``Thread 499 (idle): "MainThread"`` and
``    replay (npu_graph_runner.py:82)`` frames) or faulthandler's (a fatal signal, or a timeout
that dumped a live process: ``  File "x.py", line 510 in event_loop_overlap``, without the
comma a traceback's frame has).

A dump is printed for a failure: one already reported takes it as a knock-on; a dump that lost
that report (a paste that starts at the frames) is the failure all the same: a hang for
py-spy's (a watchdog found the process stuck), a crash for faulthandler's (what it prints on a
fatal signal)."""

from __future__ import annotations

import re

_PYSPY_THREAD_RE = re.compile(r'\s*Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:active|idle)[^)]*\): "')
_PYSPY_FRAME_RE = re.compile(r"\s+[\w<>.$]+ \([^()\s]+:\d+\)\s*$")
_FAULT_FRAME_RE = re.compile(r'File "[^"]+", line \d+ in \S')


def thread_dump(body: list[str]) -> tuple[str, int] | None:
    """("hang" or "crash", index of the dump's innermost frame) for a record that is a thread
    dump, or None. Two frames at least: one line in that shape is no dump."""
    lines = body[:64]
    for i, b in enumerate(lines):
        if "Thread " in b and _PYSPY_THREAD_RE.match(b):
            frames = [j for j in range(i + 1, min(i + 3, len(lines))) if _PYSPY_FRAME_RE.match(lines[j])]
            if len(frames) >= 2:
                return "hang", frames[0]
    frames = [i for i, b in enumerate(lines) if 'File "' in b and _FAULT_FRAME_RE.search(b)]
    if len(frames) >= 2 and not any("Traceback (most recent call last)" in b for b in lines):
        return "crash", frames[0]
    return None
