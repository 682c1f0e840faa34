"""Write a result file (summary, ledger, report) all at once or not at all.

A reader (a dashboard, ``tuiapp compare``, a script polling the file) or a crash, a Ctrl-C or a
full disk mid-write must never see half a file: the text goes to a temporary file in the same
directory (same file system, so the rename is atomic), is flushed to disk, and only then
replaces the target with ``os.replace``. The temporary file never survives a failure.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

# the mode open() would give a new file: read once, since reading the umask sets it
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path: str | Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``data`` in one step; raises OSError with the target unchanged."""
    path = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # a file that exists keeps its permissions
    except OSError:
        mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:  # a full disk, a Ctrl-C between write and rename: no stray temp file
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
