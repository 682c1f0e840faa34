"""SGLang's own start-up breakdown (its ``/metrics`` start-up families), as every sink shows it.

The server times its start-up by phase (tuiapp.server.metric_names names the families):
``tokenizer_e2e`` is the engine's launch to ready, ``scheduler_e2e`` a scheduler's start-up,
which contains ``load_weight`` (target and draft weights), ``kv_cache_allocation`` and the CUDA
graph captures (one figure per graph phase, summed here as ``cuda_graph``). Phases nest, so
they are listed, never added up. Main-branch servers add the phases of their start-up registry
(``distributed_init``, JIT compiles, ``draft_`` for the draft model's share), listed after the
named ones, longest first, and count start-up work done after ready (a lazy JIT compile that
stalls the first requests) as ``post_startup_s``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOTAL = "tokenizer_e2e"  # launch to ready, as the engine measures it
SCHEDULER = "scheduler_e2e"
NAMED = ("load_weight", "kv_cache_allocation", "cuda_graph")
GRAPHS = "cuda_graph"


def total_s(phases: Mapping[str, float] | None) -> float | None:
    """The engine's launch-to-ready time (the scheduler's where the engine's is missing)."""
    if not phases:
        return None
    return phases.get(TOTAL, phases.get(SCHEDULER))


def parts(phases: Mapping[str, float] | None, graphs: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """(phase, seconds) in reading order: the total, the scheduler's, the named parts, then
    the registry's phases, longest first."""
    phases = dict(phases or {})
    out: list[tuple[str, float]] = []
    for name in (TOTAL, SCHEDULER):
        if name in phases:
            out.append((name, phases.pop(name)))
    if graphs:
        phases[GRAPHS] = sum(graphs.values())
    for name in NAMED:
        if name in phases:
            out.append((name, phases.pop(name)))
    out += sorted(phases.items(), key=lambda kv: (-kv[1], kv[0]))
    return out


def text(phases: Mapping[str, float] | None, graphs: Mapping[str, float] | None = None,
         post_startup_s: float | None = None) -> str:
    """``tokenizer_e2e=27.33s scheduler_e2e=2.87s load_weight=0.03s ...``: greppable, one line."""
    words = [f"{name}={seconds:.2f}s" for name, seconds in parts(phases, graphs)]
    if post_startup_s:
        words.append(f"after_ready={post_startup_s:.2f}s")
    return " ".join(words)


def as_json(phases: Mapping[str, float] | None, graphs: Mapping[str, float] | None = None,
            post_startup_s: float | None = None) -> dict[str, Any]:
    """The breakdown for a summary file or a ledger row (empty when the server gave none)."""
    if not phases and not graphs:
        return {}
    out: dict[str, Any] = {"total_s": total_s(phases), "phases_s": dict(phases or {})}
    if graphs:
        out["cuda_graph_s"] = dict(graphs)
    if post_startup_s is not None:
        out["post_startup_s"] = post_startup_s
    return out


class Latest:
    """The newest breakdown a sink has seen (a ServerStats' start-up fields come once, when first
    read or changed; work after ready grows)."""

    __slots__ = ("phases", "graphs", "post_startup_s")

    def __init__(self) -> None:
        self.phases: dict[str, float] | None = None
        self.graphs: dict[str, float] | None = None
        self.post_startup_s: float | None = None

    def observe(self, event: Any) -> bool:
        """Takes a ServerStats' start-up fields; True when the breakdown itself changed."""
        phases = getattr(event, "startup_phases_s", None)
        graphs = getattr(event, "startup_cuda_graph_s", None)
        post = getattr(event, "post_startup_s", None)
        if post is not None:
            self.post_startup_s = post
        if phases is None and graphs is None:
            return False
        self.phases = phases if phases is not None else self.phases
        self.graphs = graphs if graphs is not None else self.graphs
        return True

    def __bool__(self) -> bool:
        return self.phases is not None or self.graphs is not None

    def text(self, *, with_post: bool = True) -> str:
        return text(self.phases, self.graphs, self.post_startup_s if with_post else None)

    def as_json(self) -> dict[str, Any]:
        return as_json(self.phases, self.graphs, self.post_startup_s)
