"""parse_metrics reads only the families it wants: same answer as parsing everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuiapp.server import metrics_poll
from tuiapp.server.metrics_poll import parse_metrics

DATA = Path(__file__).parent / "data" / "bench"


@pytest.mark.parametrize("name", ["metrics_sglang_0.5.23_cpu.txt", "metrics_dp2.txt"])
def test_filtered_parse_equals_full_parse(name, monkeypatch):
    text = (DATA / name).read_text()
    fast = parse_metrics(text)
    monkeypatch.setattr(metrics_poll, "_wanted_lines", lambda t: t)  # the whole exposition
    assert fast == parse_metrics(text)
    assert fast  # the real server's gauges are there


def test_filter_keeps_a_small_part_of_a_real_exposition():
    text = (DATA / "metrics_sglang_0.5.23_cpu.txt").read_text()
    kept = metrics_poll._wanted_lines(text)
    assert len(kept) * 10 < len(text)
    assert "sglang:gen_throughput" in kept and "# TYPE sglang:gen_throughput gauge" in kept
