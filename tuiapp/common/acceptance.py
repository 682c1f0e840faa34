"""Speculative acceptance per draft position, from SGLang's per-request histograms.

SGLang returns (``meta_info``, sgl-project/sglang#18332) ``spec_accept_histogram`` (also
spelled ``spec_correct_drafts_histogram``): ``H[j]`` = verify steps that accepted exactly
``j`` drafts. Under an adaptive step budget (#21599) or DSpark caps a step may propose fewer
drafts than the longest; ``spec_cap_lens_histogram`` gives ``C[c]`` = verify steps whose
budget was ``c`` drafts. A position beyond a step's budget was never proposed: it is
*unobserved*, not rejected (the rule of #31750), so

    rate(k)        = sum_{j>=k} H[j] / sum_{c>=k} C[c]     (without C: / sum H)
    conditional(k) = rate(k) / rate(k-1)                   (rate(0) = 1)

``rate`` is exact from the two histograms; ``conditional`` (a draft accepted given the one
before it was) is exact without caps, and assumes a step's cap is independent of how far it
would have got otherwise when there are caps.

Counts pool by summing, whichever DP rank served the request: that weights each rank by its
verify steps, as the server's own totals do (averaging per-rank rates would not).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# meta_info / sglext spellings, newest first: one place for both names
HISTOGRAM_KEYS = ("spec_accept_histogram", "spec_correct_drafts_histogram")
CAP_HISTOGRAM_KEYS = ("spec_cap_lens_histogram",)


@dataclass(frozen=True, slots=True)
class PositionRate:
    position: int  # 1 = the first draft after the verified token
    accepted_steps: int  # verify steps that accepted this position
    observed_steps: int  # verify steps whose budget reached this position
    rate: float | None  # accepted / observed; None when never observed
    conditional: float | None  # given the previous position was accepted


def counts(value: object) -> list[int] | None:
    """A histogram as sent (a list of non-negative counts), else None: hostile input is no reading."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out: list[int] = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x < 0 or x == float("inf"):
            return None
        out.append(int(x))
    return out if any(out) else None


def from_mapping(meta: dict, keys: Sequence[str]) -> list[int] | None:
    for key in keys:
        if key in meta:
            found = counts(meta[key])
            if found is not None:
                return found
    return None


def add(a: Sequence[int] | None, b: Sequence[int] | None) -> list[int] | None:
    """Element-wise sum of two ragged histograms (a shorter one has zeros beyond its end)."""
    if not a:
        return list(b) if b else None
    if not b:
        return list(a)
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def pool(histograms: Iterable[Sequence[int] | None]) -> list[int] | None:
    out: list[int] | None = None
    for h in histograms:
        out = add(out, h)
    return out


def pool_pairs(pairs: Iterable[tuple[Sequence[int] | None, Sequence[int] | None]]) -> tuple[list[int] | None, list[int] | None]:
    """(accepted, caps) histograms of several requests or runs, pooled. Where some came with
    caps and others without, the others' steps count as having had the longest budget seen
    (no caps: every step could propose them all); with no caps at all, caps stay None."""
    accepted: list[int] | None = None
    caps: list[int] | None = None
    uncapped = 0
    for h, c in pairs:
        if not h:
            continue
        accepted = add(accepted, h)
        if c and sum(c) == sum(h):
            caps = add(caps, c)
        else:
            uncapped += sum(h)
    if caps is None or accepted is None:
        return accepted, None
    top = max(len(accepted), len(caps)) - 1
    caps = caps + [0] * (top + 1 - len(caps))
    caps[top] += uncapped
    return accepted, caps


def _usable_caps(accepted: Sequence[int], caps: Sequence[int] | None) -> Sequence[int] | None:
    # a cap histogram counts the same verify steps; one that does not is no reading
    if not caps or sum(caps) != sum(accepted):
        return None
    return caps


def per_position(accepted: Sequence[int] | None, caps: Sequence[int] | None = None) -> list[PositionRate]:
    """Acceptance of each draft position, 1 .. the longest budget seen."""
    if not accepted or not sum(accepted):
        return []
    caps = _usable_caps(accepted, caps)
    steps = sum(accepted)
    top = max(len(accepted), len(caps) if caps else 0) - 1
    out: list[PositionRate] = []
    prev_rate: float | None = 1.0
    for k in range(1, top + 1):
        got = sum(accepted[k:])
        seen = sum(caps[k:]) if caps else steps
        rate = got / seen if seen else None
        cond = rate / prev_rate if rate is not None and prev_rate else None
        out.append(PositionRate(k, got, seen, rate, cond))
        prev_rate = rate
    return out


def length_shares(accepted: Sequence[int] | None) -> list[float]:
    """Share of verify steps with accept length 1, 2, ... (length = accepted drafts + the bonus token)."""
    if not accepted or not sum(accepted):
        return []
    steps = sum(accepted)
    return [h / steps for h in accepted]


def mean_length(accepted: Sequence[int] | None) -> float | None:
    """Mean accepted tokens per verify step (drafts + bonus), from the histogram."""
    if not accepted or not sum(accepted):
        return None
    return 1.0 + sum(j * h for j, h in enumerate(accepted)) / sum(accepted)


def window_length(d_generated_tokens: float, d_verify_calls: float) -> float | None:
    """Exact accept length over a window: generated tokens / verify calls, from two counter deltas.

    None for a window without verify calls (idle, or no speculation) and for a counter reset
    (a restarted server), which shows as a negative delta."""
    if d_verify_calls <= 0 or d_generated_tokens < 0:
        return None
    return d_generated_tokens / d_verify_calls


class Tally:
    """Histograms pooled as they arrive (a trial's requests): what a live view keeps."""

    __slots__ = ("accepted", "caps", "requests")

    def __init__(self) -> None:
        self.accepted: list[int] | None = None
        self.caps: list[int] | None = None
        self.requests = 0

    def add(self, accepted: Sequence[int] | None, caps: Sequence[int] | None = None) -> bool:
        if not accepted:
            return False
        self.accepted, self.caps = pool_pairs([(self.accepted, self.caps), (accepted, caps)])
        self.requests += 1
        return True

    @property
    def steps(self) -> int:
        return sum(self.accepted) if self.accepted else 0

    def positions(self) -> list[PositionRate]:
        return per_position(self.accepted, self.caps)


def figures(accepted: Sequence[int] | None, caps: Sequence[int] | None = None) -> dict[str, list[float | None]]:
    """Acceptance per position (1 first) and its conditional rate, for a summary file (empty
    without a histogram): the ledger's ``accept_by_position`` is the same figure."""
    positions = per_position(accepted, caps)
    if not positions:
        return {}
    return {"accept_by_position": [p.rate for p in positions],
            "accept_conditional_by_position": [p.conditional for p in positions]}


def positions_text(accepted: Sequence[int] | None, caps: Sequence[int] | None = None) -> str:
    """``accept_pos=90.3/63.0/31.2% accept_cond=90.3/69.4/49.3%`` for a printed line ("" without
    a histogram); a position no step could reach reads n/a."""
    positions = per_position(accepted, caps)
    if not positions:
        return ""

    def pcts(values: list[float | None]) -> str:
        return "/".join("n/a" if v is None else f"{100 * v:.1f}" for v in values) + "%"

    return (f"accept_pos={pcts([p.rate for p in positions])}"
            f" accept_cond={pcts([p.conditional for p in positions])}")
