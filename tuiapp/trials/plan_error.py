"""The one error a plan gives, in one line: ``file:line: field: message`` (a TOML plan's or an SGLang
auto_benchmark config's alike)."""

from __future__ import annotations


class PlanError(ValueError):
    """One line: ``file:line: field: message``."""
