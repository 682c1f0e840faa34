"""What the benchmark loop sends, how often, and how long it waits."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

ApiName = Literal["generate", "completions", "chat"]
SweepName = Literal["concurrency", "request_rate"]


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
    # Load model (docs/load-curves.md): request_rate None is closed loop at `concurrency`;
    # a rate is open loop (gamma arrivals of shape `burstiness`; 1 = Poisson), capped at
    # `max_concurrency` requests in flight.
    request_rate: float | None = Field(None, gt=0)
    burstiness: float = Field(1.0, gt=0)
    max_concurrency: int | None = Field(None, ge=1)
    # Workload spreads: lengths drawn uniformly from mean +- spread.
    input_spread: int = Field(0, ge=0)
    output_spread: int = Field(0, ge=0)
    shared_prefix_tokens: int = Field(0, ge=0)
    prefix_groups: int = Field(1, ge=1)
    # Sweep: the load values, one point each; `runs` runs per point.
    sweep: SweepName | None = None
    sweep_values: tuple[float, ...] = ()
    slo_ttft_ms: float | None = Field(None, gt=0)
    slo_tpot_ms: float | None = Field(None, gt=0)
    slo_e2e_ms: float | None = Field(None, gt=0)
    find_max_load: bool = False
    max_search_points: int = Field(8, ge=2)  # bound on --find-max-load's probes
    # a plan's opt-in: before the runs, the first prompts one at a time at temperature 0, their
    # output hashed; a trial whose output differs from its reference's is invalid (the ledger)
    check_output: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        """The command line's forms, also in a plan's [bench] table: sweep = "concurrency=1,4",
        slo = "ttft_ms=2000,tpot_ms=100", input_tokens / output_tokens = "512:64"."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("sweep"), str) and "=" in data["sweep"]:
            data["sweep"], data["sweep_values"] = parse_sweep(data["sweep"])
        if "slo" in data:
            data.update(parse_slo(data.pop("slo")))
        if isinstance(data.get("input_tokens"), str):
            data.setdefault("workload", "synthetic")  # "512:64" says synthetic prompts of that length
        for key, mean_key, spread_key in (("input_tokens", "input_tokens", "input_spread"),
                                          ("output_tokens", "max_new_tokens", "output_spread")):
            if key in data and isinstance(data[key], str):
                data[mean_key], data[spread_key] = parse_mean_spread(data.pop(key) if key != mean_key else data[key])
            elif key == "output_tokens" and key in data:
                data[mean_key] = data.pop(key)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> BenchSettings:
        if self.sweep is not None and not self.sweep_values:
            raise ValueError("sweep needs at least one value")
        if self.check_output and self.temperature != 0:
            raise ValueError("check_output needs temperature 0 (sampled output differs by chance)")
        if self.find_max_load and not self.has_slo:
            raise ValueError("find_max_load needs an SLO (slo = 'ttft_ms=..,tpot_ms=..')")
        for mean, spread, name in ((self.input_tokens, self.input_spread, "input_tokens"),
                                   (self.max_new_tokens, self.output_spread, "output_tokens")):
            if spread >= mean:
                raise ValueError(f"{name}: the spread must be below the mean ({mean}:{spread})")
        if self.workload != "synthetic" and (self.shared_prefix_tokens or self.prefix_groups > 1 or self.input_spread):
            raise ValueError("shared prefixes, prefix groups and an input spread need synthetic prompts"
                             " (--input-tokens)")
        return self

    @property
    def run_size(self) -> int:
        if self.requests_per_run:
            return self.requests_per_run
        if self.request_rate is not None:
            # about 8 s of arrivals, at least 16 requests: enough for p90 and a steady rate
            return max(16, round(self.request_rate * 8))
        return self.concurrency

    @property
    def has_slo(self) -> bool:
        return any(v is not None for v in (self.slo_ttft_ms, self.slo_tpot_ms, self.slo_e2e_ms))

    def points(self) -> list[BenchSettings]:
        """The settings of each load point: the sweep's values, or the one point."""
        if self.sweep is None:
            return [self]
        return [self.at_load(self.sweep, v) for v in self.sweep_values]

    def at_load(self, name: str, value: float) -> BenchSettings:
        """The settings of one load point (a sweep's, a search probe's): ``concurrency`` N
        holds N requests in flight, so a run has at least N requests (a plan's default is 1
        request a run, for the campaign's single stream, which never loads a server to N);
        ``request_rate`` R sends open loop."""
        if name == "concurrency":
            n = int(value)
            return self.model_copy(update={"concurrency": n, "request_rate": None,
                                           "requests_per_run": max(self.requests_per_run or 0, n)})
        return self.model_copy(update={"request_rate": float(value)})


NO_MODEL = ""  # ``model``: requests name no model (a one-model server whose /v1/models fails)


def for_server(settings: BenchSettings, engine: str, *, api: str = "auto", model: str | None = None,
               name_no_model: bool = False) -> BenchSettings:
    """What the server that answered can take: ``api`` "auto" is /generate on SGLang, with its
    extension fields; any other OpenAI-compatible server gets the standard API only (chat),
    named ``model`` (a given ``--model`` wins; ``name_no_model``: no name at all)."""
    sglang = engine == "sglang"
    if api == "auto":
        api = "generate" if sglang else "chat"
    update: dict[str, Any] = {"api": api, "sglang_extensions": sglang, "flush_cache": settings.flush_cache and sglang}
    if settings.model is None and not sglang:
        update["model"] = NO_MODEL if name_no_model else model
    return settings.model_copy(update=update)


def parse_mean_spread(text: str) -> tuple[int, int]:
    """'512:64' -> (512, 64); '512' -> (512, 0)."""
    mean_s, _, spread_s = str(text).partition(":")
    try:
        mean, spread = int(mean_s), int(spread_s or 0)
    except ValueError:
        raise ValueError(f"expected MEAN[:SPREAD] in tokens, e.g. 512:64, not {text!r}") from None
    if mean < 1 or spread < 0:
        raise ValueError(f"expected a mean >= 1 and a spread >= 0, not {text!r}")
    return mean, spread


def parse_sweep(text: str) -> tuple[str, tuple[float, ...]]:
    """'concurrency=1,4,16' or 'request-rate=1,2,4'."""
    name, _, values = text.partition("=")
    name = name.strip().replace("-", "_")
    if name not in ("concurrency", "request_rate"):
        raise ValueError(f"sweep: expected concurrency=N,N,... or request-rate=R,R,..., not {text!r}")
    try:
        vals = tuple(float(v) for v in values.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"sweep: values must be numbers: {values!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise ValueError(f"sweep: values must be > 0: {values!r}")
    if name == "concurrency" and any(v != int(v) for v in vals):
        raise ValueError(f"sweep: concurrency values must be whole numbers: {values!r}")
    return name, vals


_SLO_KEYS = {"ttft_ms": "slo_ttft_ms", "tpot_ms": "slo_tpot_ms", "e2e_ms": "slo_e2e_ms"}


def parse_slo(value: Any) -> dict[str, float]:
    """'ttft_ms=2000,tpot_ms=100' (or a table {ttft_ms = 2000, ...}) -> settings fields."""
    if isinstance(value, dict):
        items = list(value.items())
    else:
        items = []
        for part in str(value).split(","):
            key, eq, num = part.partition("=")
            if not eq:
                raise ValueError(f"slo: expected ttft_ms=N,tpot_ms=N,e2e_ms=N, not {part!r}")
            items.append((key.strip(), num.strip()))
    out: dict[str, float] = {}
    for key, num in items:
        if key not in _SLO_KEYS:
            raise ValueError(f"slo: unknown goal {key!r} (ttft_ms, tpot_ms, e2e_ms)")
        try:
            out[_SLO_KEYS[key]] = float(num)
        except (TypeError, ValueError):
            raise ValueError(f"slo: {key} must be a number, not {num!r}") from None
    return out
