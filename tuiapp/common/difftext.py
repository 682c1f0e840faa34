"""A trial's config diff as one line of text (ledger rows, reports, the details screen)."""

from __future__ import annotations

from typing import Any


def diff_text(diff: Any) -> str:
    """``key baseline->trial, ...``; tolerant of other shapes, since a report also reads the
    rows back from recordings."""
    if not isinstance(diff, dict):
        return "" if diff is None else str(diff)

    def show(v: Any) -> str:
        return "default" if v is None else str(v)

    return ", ".join(
        f"{k} {show(v.get('baseline'))}->{show(v.get('trial'))}" if isinstance(v, dict) else f"{k}={v}"
        for k, v in diff.items()
    )
