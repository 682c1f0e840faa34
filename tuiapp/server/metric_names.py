"""SGLang's two spellings of one metric name: ``sglang:x`` and ``sglang_x``.

The server writes ``sglang:`` (prometheus_client, multiprocess mode); the router's
``/engine_metrics``, OpenMetrics/Prometheus name escaping (``:`` is reserved for recording
rules) and ``/v1/loads?format=prometheus`` give ``sglang_`` (sgl-project/sglang#12970,
rl-insight#160, inference-perf#600). tuiapp names each family once, in the server's spelling,
and reads either.
"""

from __future__ import annotations

from collections.abc import Iterable

SERVER_PREFIX = "sglang:"
ESCAPED_PREFIX = "sglang_"


def server_name(name: str) -> str:
    """A metric name in the server's spelling, whichever spelling it came in."""
    if name.startswith(ESCAPED_PREFIX):
        return SERVER_PREFIX + name[len(ESCAPED_PREFIX):]
    return name


def escaped_name(name: str) -> str:
    return ESCAPED_PREFIX + name[len(SERVER_PREFIX):] if name.startswith(SERVER_PREFIX) else name


def spellings(names: Iterable[str]) -> tuple[str, ...]:
    """Both spellings of each name: the prefixes a sample line of the family may start with."""
    out: list[str] = []
    for name in names:
        out += [name, escaped_name(name)]
    return tuple(out)
