"""One request as the simulated scheduler holds it: its prompt, its output so far, its times."""

from __future__ import annotations

import time
from collections.abc import Callable

from tuiapp.sim import textgen
from tuiapp.sim.acceptance import AcceptSampler
from tuiapp.sim.model import CLIP_MAX_NEW_TOKENS


class SimRequest:
    __slots__ = (
        "rid", "prompt_ids", "prompt_tokens", "cached_tokens", "max_new", "ignore_eos", "eos_at",
        "stops", "walk", "completion_tokens", "output_ids", "text", "pending", "spec_verify_ct",
        "correct_drafts", "proposed_drafts", "finish_reason", "sink", "t_arrive", "t_first",
        "t_last", "t_done", "sampler", "retractions", "aborted", "itl_s", "streaming",
        "t_admit", "resumed", "t_ready", "accept_hist", "cap_hist", "dp_rank",
    )

    def __init__(self, rid: str, prompt_ids: list[int], max_new: int, ignore_eos: bool,
                 stops: list[str], salt: int, sink: Callable, streaming: bool):
        self.rid = rid
        self.prompt_ids = prompt_ids
        self.prompt_tokens = len(prompt_ids)
        self.cached_tokens = 0
        self.max_new = max_new
        self.ignore_eos = ignore_eos
        self.eos_at = textgen.eos_after(prompt_ids, salt)
        self.stops = {s.strip() for s in stops if s.strip()}
        self.walk = textgen.start_state(prompt_ids, salt)
        self.completion_tokens = 0
        self.output_ids: list[int] = []
        self.text = ""
        self.pending = 0
        self.spec_verify_ct = 0
        self.correct_drafts = 0
        self.proposed_drafts = 0
        self.finish_reason: dict | None = None
        self.sink = sink
        self.t_arrive = time.monotonic()
        self.t_first = self.t_last = self.t_done = 0.0
        self.sampler: AcceptSampler | None = None
        self.retractions = 0
        self.aborted = False
        self.itl_s: list[float] = []
        self.streaming = streaming
        self.t_admit = 0.0  # first admission into a prefill batch (queue_time = t_admit - t_arrive)
        self.t_ready = 0.0  # when the tokenizer manager's serial stage hands it to the scheduler
        self.resumed = False  # retracted: its next prefill recomputes input + output so far
        self.accept_hist: list[int] = []  # H[j]: verify steps that accepted exactly j drafts
        self.cap_hist: list[int] = []  # C[c]: verify steps whose budget was c drafts
        self.dp_rank = 0

    @property
    def queue_s(self) -> float:
        return max(self.t_admit - self.t_arrive, 0.0) if self.t_admit else 0.0

    @property
    def remaining_new(self) -> int:
        return min(max(self.max_new - self.completion_tokens, 0), CLIP_MAX_NEW_TOKENS)
