"""SGLang's two spellings of one metric name: ``sglang:x`` and ``sglang_x``.

The server writes ``sglang:`` (prometheus_client, multiprocess mode); the router's
``/engine_metrics``, OpenMetrics/Prometheus name escaping (``:`` is reserved for recording
rules) and ``/v1/loads?format=prometheus`` give ``sglang_`` (sgl-project/sglang#12970,
rl-insight#160, inference-perf#600). tuiapp names each family once, in the server's spelling,
and reads either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SERVER_PREFIX = "sglang:"
ESCAPED_PREFIX = "sglang_"  # the same but its last character: sample_line_pattern relies on it


def sample_line_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """A regex for the sample lines of ``names`` (server spelling) in either spelling: group 1
    the name after its prefix, 2 the labels (or None), 3 the value. It starts with the literal
    both spellings share, so the regex engine jumps from one "sglang" to the next in C (a ``^``
    would make it try every character: 4x slower on a 744-line exposition); a match must still
    start a line (a ``# TYPE`` comment names the family too), which the caller checks. Longest
    names first, so a name is never read as a shorter one it starts with."""
    suffixes = sorted((n[len(SERVER_PREFIX):] for n in names), key=len, reverse=True)
    return re.compile(
        re.escape(SERVER_PREFIX[:-1]) + "[" + re.escape(SERVER_PREFIX[-1] + ESCAPED_PREFIX[-1]) + "]("
        + "|".join(re.escape(s) for s in suffixes)
        + r")(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+\S+)?[ \t]*\r?$", re.M)


# Start-up families, each with a ``phase`` label (durations in seconds). SGLang 0.5.23 emits
# the first two (phases load_weight, kv_cache_allocation, scheduler_e2e, tokenizer_e2e; graph
# phases prefill, decode, target_verify, draft_prefill, draft_decode, draft_extend); the main
# branch adds the phases of its start-up registry to the first (distributed_init, JIT, a
# ``draft_`` prefix for the draft model's work; they nest, so they do not sum to the total) and
# counts start-up work done after ready (lazy JIT) in the third
# (observability/startup_phase_registry.py, startup_time.py, test_metrics.py).
STARTUP_TIME = "sglang:startup_time_seconds"
STARTUP_CUDA_GRAPH_TIME = "sglang:startup_cuda_graph_time_seconds"
POST_STARTUP_TIME_TOTAL = "sglang:post_startup_time_seconds_total"
STARTUP_FAMILIES = (STARTUP_TIME, STARTUP_CUDA_GRAPH_TIME, POST_STARTUP_TIME_TOTAL)
