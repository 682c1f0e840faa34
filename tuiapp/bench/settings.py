"""What the benchmark loop sends, how often, and how long it waits."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

ApiName = Literal["generate", "completions", "chat"]


class Timeouts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_s: float = Field(5.0, gt=0)
    first_token_s: float = Field(120.0, gt=0)  # a long prompt's prefill on a busy server
    stall_s: float = Field(30.0, gt=0)  # longest gap between two chunks of one stream


class BenchSettings(BaseModel):
    """One benchmark configuration.

    A *run* is ``requests_per_run`` requests sent closed-loop at ``concurrency``; runs
    repeat until ``runs`` are done (None: until stopped). ``requests_per_run`` None means
    one request per concurrent stream, i.e. one request per run at concurrency 1 - what the
    campaign's script did (5 runs of 1 request each).

    The one benchmark model of attach, launch and plans. A plan's ``[bench]`` table may use
    the keys earlier plans used: ``prompts`` (requests_per_run), ``max_tokens``
    (max_new_tokens), ``warmup`` (warmup_requests).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    api: ApiName = "generate"
    workload: str = "reference"  # "reference" | "synthetic" | path to a JSONL prompt file
    input_tokens: int = Field(128, ge=1)  # synthetic workload only
    max_new_tokens: int = Field(256, ge=1, validation_alias=AliasChoices("max_new_tokens", "max_tokens"))
    ignore_eos: bool = True
    temperature: float = 0.0
    concurrency: int = Field(1, ge=1)
    requests_per_run: int | None = Field(None, ge=1, validation_alias=AliasChoices("requests_per_run", "prompts"))
    runs: int | None = Field(None, ge=1)
    warmup_requests: int = Field(1, ge=0, validation_alias=AliasChoices("warmup_requests", "warmup"))
    timeouts: Timeouts = Field(default_factory=Timeouts)
    flush_cache: bool = True  # after warm-up and on restart, so accept length is per trial
    model: str | None = None  # OpenAI APIs: None asks /v1/models for the first model
    spec_details: bool = True  # ask OpenAI endpoints for per-request acceptance (sglext)
    # SGLang's extension fields (ignore_eos, return_spec_tokens_details) on the OpenAI
    # endpoints; strict servers (transformers serve: HTTP 422) reject unknown fields
    sglang_extensions: bool = True
    seed: int = 0  # order of prompts, synthetic token ids

    @property
    def run_size(self) -> int:
        return self.requests_per_run or self.concurrency
