"""Error messages known from the sources before any user pasted them.

``catalogue.json`` (beside this module, written by ``tools/error_catalogue.py``) lists the
templates SGLang prints through ``logger.error`` / ``logger.exception`` / ``logger.critical``
(its log format has no level, so the text is the only sign), the router/gateway's
``error!``, and the error reports of NCCL, torch c10 and the ROCm runtime. A template's
literal head (the text before its first placeholder) is what a line must start with; heads
are indexed by their first KEY_CHARS characters, so a line costs one dict look-up and a
``startswith`` or two (indexed by first word, "Failed ..." lines tried hundreds of heads).
"""

from __future__ import annotations

import functools
from pathlib import Path

import orjson

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")
MIN_HEAD_CHARS = 14  # shorter heads ("Error: ", "Failed to ") say too little on their own
MIN_HEAD_WORDS = 2
KEY_CHARS = 12  # <= MIN_HEAD_CHARS
# logged at error level, but the diagnostics of a failure another line reports (the
# scheduler watchdog's stack dump comes just before its timeout line)
NOT_A_FAILURE = ("Pyspy ", "py-spy ")


@functools.cache
def _index() -> dict[str, tuple[str, ...]]:
    try:
        data = orjson.loads(CATALOGUE_PATH.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    by_key: dict[str, set[str]] = {}
    for t in data.get("templates", []):
        if t.get("level") not in ("error", "critical", "exception", "fatal"):
            continue
        head = t.get("head", "")
        if len(head) < MIN_HEAD_CHARS or len(head.split()) < MIN_HEAD_WORDS or head.startswith(NOT_A_FAILURE):
            continue
        by_key.setdefault(head[:KEY_CHARS], set()).add(head)
    # longest first: the most specific template decides
    return {k: tuple(sorted(h, key=len, reverse=True)) for k, h in by_key.items()}


_heads: dict[str, tuple[str, ...]] | None = None


def known_error(line: str) -> bool:
    """The line starts like an error message the sources print."""
    global _heads
    if _heads is None:
        _heads = _index()
    heads = _heads.get(line[:KEY_CHARS])
    return heads is not None and any(line.startswith(h) for h in heads)
