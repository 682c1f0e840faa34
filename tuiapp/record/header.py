"""The first line of a recording: what was recorded, where, with what, by which command."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterable
from typing import Any

from tuiapp import __version__
from tuiapp.common.redact import own_options, redact_argv, redact_tree

FORMAT = "tuiapp-recording"
VERSION = 1

def build_header(extras: dict[str, Any] | None = None, *, start_t_s: float | None = None) -> dict[str, Any]:
    """Header dict: fixed keys first, then the session's extras (``gpus``, ``sglang_version``,
    ``title``, ...), which may override the defaults but never ``format``/``version``."""
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "tool_version": __version__,
        "start_t_s": time.time() if start_t_s is None else start_t_s,
        "host": socket.gethostname(),
        "gpus": None,  # inventory: list of {index, name, uuid, mem_total_bytes, ...}
        "sglang_version": None,  # often unknown at start; ServerInfo events carry it later
        "argv": list(sys.argv),
    }
    for key, value in (extras or {}).items():
        if key not in ("format", "version"):
            header[key] = value
    header["argv"] = _redact_tuiapp_argv([str(a) for a in header.get("argv") or []])
    return redact_tree(header)


def _redact_tuiapp_argv(argv: list[str]) -> list[str]:
    """tuiapp's own options judged by tuiapp's parser (``--api chat`` is not ``--api-key``),
    a server command after ``--`` by SGLang's."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return redact_argv(argv[:cut], own_options()) + redact_argv(argv[cut:])


def gpu_inventory(samples: Iterable[Any]) -> list[dict[str, Any]]:
    """The header's ``gpus`` list from GpuSample events (first sample of each GPU)."""
    seen: dict[tuple[Any, int], dict[str, Any]] = {}
    for s in samples:
        key = (getattr(s, "node", None), s.index)
        if key not in seen:
            seen[key] = {"index": s.index, "name": s.name, "uuid": s.uuid, "node": s.node,
                         "mem_total_bytes": s.mem_total_bytes, "pcie_gen_max": s.pcie_gen_max,
                         "pcie_width_max": s.pcie_width_max}
    return [seen[k] for k in sorted(seen, key=lambda k: (k[0] or "", k[1]))]


def check_header(obj: object) -> str | None:
    """Why ``obj`` is not a header this version can read, or None when it is."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        return "not a tuiapp recording (no header line)"
    version = obj.get("version")
    if not isinstance(version, int) or version < 1:
        return "recording header has no valid version"
    if version > VERSION:
        return f"recording format version {version} is newer than this tuiapp reads ({VERSION})"
    return None
