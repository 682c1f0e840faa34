"""The names and units of the benchmark's figures, written once for every sink (dashboard,
headless lines, summaries): what a figure is (per stream or aggregate, mean or percentile)
is part of its label, never left to a panel title.

- per stream: one request's decode rate, (completion tokens - 1) / (e2e - TTFT), averaged
  over a run's requests: what one user sees.
- aggregate: completion tokens of every stream / wall time (client), or SGLang's
  ``gen_throughput`` (server): what the GPUs deliver.
"""

from __future__ import annotations

PER_STREAM = "tok/s/stream"  # unit of a per-stream decode rate
AGGREGATE = "tok/s/aggregate"  # unit of an all-streams rate
REQ_S = "req/s"
PERCENTILES = (50, 90, 99)
PCT_NAMES = tuple(f"p{q}" for q in PERCENTILES)
