"""A long job keeps each run's figures compactly, not the pydantic event."""

from __future__ import annotations

import tracemalloc

from tuiapp.events import RunDone, RunFigures
from tuiapp.record.printer import Printer


def _run(i: int) -> RunDone:
    return RunDone(run_index=i, requests=4, errors=1, first_error="HTTP 500: boom", duration_s=3.0,
                   decode_tok_s=89.5 + i / 1000, output_tok_s=330.0, ttft_s=0.06, tpot_s=0.011,
                   accept_length=None, trial="t")


def _held_bytes(make) -> int:
    tracemalloc.start()
    try:
        held = [make(i) for i in range(500)]
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(held) == 500
    return size


def test_same_figures_a_fraction_of_the_memory() -> None:
    run = _run(7)
    figs = RunFigures(run)
    for name in RunFigures.__slots__:
        assert getattr(figs, name) == getattr(run, name)
    events = _held_bytes(_run)
    compact = _held_bytes(lambda i: RunFigures(_run(i)))
    assert compact < events / 3


def test_the_printer_summary_is_unchanged() -> None:
    p = Printer(stream=open("/dev/null", "w"))
    for i in range(3):
        p.handle(_run(i))
    assert all(isinstance(r, RunFigures) for r in p.runs)
    text = p.summary()
    assert "3 runs" in text and "trial t:" in text and "output tok/s/aggregate over runs: mean 330.0" in text
