"""parse_metrics' own sample-line reader gives what prometheus_client's parser gives."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tuiapp.server import metrics_poll
from tuiapp.server.metrics_poll import parse_metrics

DATA = Path(__file__).parent / "data" / "bench"


def _reference_samples(text: str):
    """What the lean reader must yield, read by the reference parser over the whole text."""
    for family in text_string_to_metric_families(text):
        if family.name not in metrics_poll._WANTED:
            continue
        for sample in family.samples:
            if sample.name == family.name:
                yield sample.name, sample.labels.get("dp_rank", "0"), sample.value


def _norm(samples):
    out = defaultdict(list)
    for name, dp, value in samples:
        out[(name, dp)].append("nan" if math.isnan(value) else value)
    return dict(out)


@pytest.mark.parametrize("name", ["metrics_sglang_0.5.23_cpu.txt", "metrics_dp2.txt"])
def test_real_expositions_read_as_the_reference_parser_reads_them(name):
    text = (DATA / name).read_text()
    assert _norm(metrics_poll._samples(text)) == _norm(_reference_samples(text))
    assert parse_metrics(text)  # the real server's gauges are there


EDGES = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="a \\"quoted\\", name",tp_rank="0"} 3.0
sglang:num_running_reqs{engine_type="unified",model_name="m",tp_rank="0",dp_rank="0"} 2.0 1700000000000
sglang:num_queue_reqs 7
sglang:token_usage{dp_rank="0"} NaN
sglang:gen_throughput{dp_rank="0"} +Inf
# TYPE sglang:num_retracted_reqs counter
sglang:num_retracted_reqs_total{dp_rank="0"} 4.0
sglang:num_retracted_reqs_created{dp_rank="0"} 1.7e9
sglang:spec_accept_length{model_name="dp_rank=\\"9\\"",dp_rank="0"} 2.5
"""


def test_labels_escapes_timestamps_and_companions():
    assert _norm(metrics_poll._samples(EDGES)) == _norm(_reference_samples(EDGES))
    fields = parse_metrics(EDGES)
    assert fields["running_reqs"] == 5 and fields["queue_reqs"] == 7
    assert fields["accept_length"] == 2.5
    assert "token_usage" not in fields and "gen_throughput_tok_s" not in fields  # NaN, Inf: no reading
    assert "retracted_reqs" not in fields  # only its _total and _created companions came
