"""The bus events of the benchmark loop's measurements: one request, one run."""

from __future__ import annotations

from collections import Counter

from tuiapp.bench.client import RequestResult
from tuiapp.common import acceptance, stats
from tuiapp.common.outcome import classify, reason_text
from tuiapp.events import Alert, RequestDone, RunDone

NAN_ALERT_ID = 4_000_001  # fixed: the bench's one numerical-fault alert


def request_event(run_index: int, req_index: int, r: RequestResult) -> RequestDone:
    outcome = classify(r)
    return RequestDone(
        run_index=run_index,
        request_index=req_index,
        ok=outcome == "ok",
        outcome=outcome,
        error=r.error,
        prompt_tokens=r.prompt_tokens,
        completion_tokens=r.completion_tokens,
        ttft_s=r.ttft_s,
        tpot_s=r.tpot_s,
        e2e_s=r.e2e_s,
        decode_tok_s=r.decode_tok_s,
        chunks=r.chunks or None,
        tokens_per_chunk=r.tokens_per_chunk,
        chunk_gap_mean_s=r.chunk_gap_mean_s,
        accept_length=r.accept_length,
        accept_rate=r.accept_rate,
        spec_verify_ct=r.spec_verify_ct,
        spec_accept_histogram=r.spec_accept_histogram,
        spec_cap_histogram=r.spec_cap_histogram,
        finish_reason=r.finish_reason,
        numerical_fault=r.numerical_fault,
        cancelled=r.cancelled,
    )


def run_event(run_index: int, done: list[RequestResult], wall_s: float, concurrency: int, trial: str | None) -> RunDone:
    outcomes = [classify(r) for r in done]
    good = [r for r, o in zip(done, outcomes, strict=True) if o == "ok"]
    failed = [reason_text(r, o) for r, o in zip(done, outcomes, strict=True) if o not in ("ok", "cancelled")]
    by_reason = Counter(o for o in outcomes if o not in ("ok", "cancelled"))
    decode = [d for r in good if (d := r.decode_tok_s) is not None]
    tokens = sum(r.completion_tokens or 0 for r in good)
    verify = sum(r.spec_verify_ct or 0 for r in good if r.accept_length is not None)
    spec_tokens = sum(r.completion_tokens or 0 for r in good if r.spec_verify_ct and r.accept_length is not None)
    rates = [r.accept_rate for r in good if r.accept_rate is not None]
    hist, caps = acceptance.pool_pairs((r.spec_accept_histogram, r.spec_cap_histogram) for r in good)
    return RunDone(
        run_index=run_index,
        requests=len(done),
        errors=len(failed),
        errors_by_reason=dict(sorted(by_reason.items())),
        first_error=failed[0] if failed else None,
        concurrency=concurrency,
        duration_s=wall_s,
        decode_tok_s=stats.mean(decode),
        output_tok_s=tokens / wall_s if good and wall_s > 0 else None,
        ttft_s=stats.mean([r.ttft_s for r in good if r.ttft_s is not None]),
        tpot_s=stats.mean([i for r in good if (i := r.tpot_s) is not None]),
        # token-weighted, as the server computes it: tokens / verify steps over the run
        accept_length=spec_tokens / verify if verify else stats.mean([r.accept_length for r in good if r.accept_length is not None]),
        accept_rate=stats.mean(rates),
        spec_accept_histogram=hist,
        spec_cap_histogram=caps,
        trial=trial,
    )


def nan_alert(run_index: int, req_index: int, count: int) -> Alert:
    """The bench's one numerical-fault alert, updated by each later NaN finish (its id is fixed)."""
    return Alert(
        alert_kind="numerical",
        message=f"request finished with 'NaN happened' (run {run_index}, request {req_index}; {count} so far)",
        source="bench",
        alert_id=NAN_ALERT_ID,
    )
