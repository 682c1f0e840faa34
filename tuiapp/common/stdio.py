"""When stdout's reader or terminal is gone: end quietly instead of with a traceback."""

from __future__ import annotations

import os


def stdout_gone() -> None:
    """Point stdout (and stderr, when it is the same dead terminal) at /dev/null, so that later
    prints and the interpreter's final flush neither fail nor print a traceback."""
    try:
        same_file = os.path.samestat(os.fstat(1), os.fstat(2))
    except OSError:
        same_file = False
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2) if same_file else (1,):
        try:
            os.dup2(devnull, fd)
        except OSError:
            pass
    os.close(devnull)
