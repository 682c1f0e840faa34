"""Speculative decoding's accept length per verify step, drawn so a request's mean stays on the model's."""

from __future__ import annotations

import random


class AcceptSampler:
    """Accept length per verify step: 1 + leading accepted drafts (each position with its own
    conditional probability; a float is the same at every position).

    Draws come from a seeded golden-ratio (Weyl) sequence through the inverse CDF, nudged
    by one when the running total strays more than two tokens from n x E[accept]: each
    step still varies between 1 and steps+1 with nearly the model's distribution, but a
    request's mean accept length stays within 0.7% of the expectation after 85 steps
    (independent random draws: up to 13%; the Weyl sequence alone: 2%). A step may have a
    smaller budget (adaptive steps): its draw stops there.
    """

    GOLDEN = 0.6180339887498949
    NUDGE_AT = 2.0

    def __init__(self, seed: int, p: float | tuple[float, ...], steps: int):
        self.u = random.Random(seed).random()
        self.rates = tuple(p) if isinstance(p, tuple) else (p,) * steps
        self.steps = steps
        self._dists: dict[int, tuple[list[float], float]] = {}
        self.cdf, self.mean = self._dist(steps)
        self.top = steps + 1
        self.drift = 0.0  # sum of draws minus n x mean

    def _dist(self, budget: int) -> tuple[list[float], float]:
        got = self._dists.get(budget)
        if got is None:
            probs, reach = [], 1.0
            for p in self.rates[:budget]:
                probs.append(reach * (1 - p))
                reach *= p
            probs.append(reach)
            acc, cdf = 0.0, []
            for q in probs:
                acc += q
                cdf.append(acc)
            got = self._dists[budget] = (cdf, sum((j + 1) * q for j, q in enumerate(probs)))
        return got

    def draw(self, budget: int | None = None) -> int:
        cdf, mean = self._dist(self.steps if budget is None else budget)
        top = len(cdf)
        self.u = (self.u + self.GOLDEN) % 1.0
        a = top
        for i, c in enumerate(cdf):
            if self.u < c:
                a = i + 1
                break
        if self.drift + a - mean > self.NUDGE_AT and a > 1:
            a -= 1
        elif self.drift + a - mean < -self.NUDGE_AT and a < top:
            a += 1
        self.drift += a - mean
        return a
