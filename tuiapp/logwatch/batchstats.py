"""``Decode batch`` / ``Prefill batch`` log lines -> ServerStats fields.

Both spellings are accepted: 0.5.23 ``Decode batch, #running-req: ...`` and older
``Decode batch. #running-req: ..., `` (trailing separator), with an optional ``[iter]``
(env SGLANG_LOG_FORWARD_ITERS). Fields are ``key: value`` pairs split on ", "; unknown
keys (hybrid pools, MFU, disaggregation) are skipped, so new fields never break parsing.
"""

from __future__ import annotations

import re
from typing import Any

BATCH_RE = re.compile(r"(Decode|Prefill) batch(?: \[\d+\])?[.,] (.*)")

_INT = int
_FLOAT = float


def _bool(v: str) -> bool:
    return v.strip() == "True"


# log key -> (ServerStats field, converter)
_FIELDS: dict[str, tuple[str, Any]] = {
    "#running-req": ("running_reqs", _INT),
    "#queue-req": ("queue_reqs", _INT),
    "#token": ("num_tokens", _INT),
    "#full token": ("num_tokens", _INT),
    "token usage": ("token_usage", _FLOAT),
    "full token usage": ("token_usage", _FLOAT),
    "accept len": ("accept_length", _FLOAT),
    "accept rate": ("accept_rate", _FLOAT),
    "cuda graph": ("cuda_graph", _bool),
    "gen throughput (token/s)": ("gen_throughput_tok_s", _FLOAT),
    "input throughput (token/s)": ("input_throughput_tok_s", _FLOAT),
    "#retracted-req": ("retracted_reqs", _INT),
    "#new-seq": ("new_seqs", _INT),
    "#new-token": ("new_tokens", _INT),
    "#cached-token": ("cached_tokens", _INT),
}


def parse_batch_line(message: str) -> tuple[str, dict[str, Any]] | None:
    """(source, fields) for a Decode/Prefill line's message, else None."""
    if not (message.startswith("Decode batch") or message.startswith("Prefill batch")):
        return None
    m = BATCH_RE.match(message)
    if m is None:
        return None
    source = "log_decode" if m.group(1) == "Decode" else "log_prefill"
    fields: dict[str, Any] = {}
    for part in m.group(2).split(", "):
        key, sep, value = part.partition(": ")
        if not sep:
            continue
        spec = _FIELDS.get(key.strip())
        if spec is None:
            continue
        name, conv = spec
        try:
            fields[name] = conv(value.strip().rstrip(",").strip())
        except ValueError:
            continue
    if not fields:
        return None
    return source, fields
