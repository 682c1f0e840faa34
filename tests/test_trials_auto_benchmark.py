"""SGLang auto_benchmark YAML configs as plans (issue 40): the benchmark, SLA and dataset parts are
taken over or named in a note, never dropped silently; a malformed config is one line naming the
file, the line and the field, and `tuiapp trials` exits 2 without a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tuiapp.trials.plan import PlanError, load_plan

FULL = """\
server:
  env: {CUDA_VISIBLE_DEVICES: "0,1"}
  command_prefix: python3 -m sglang.launch_server
  extra_args: [--trust-remote-code]
  base_flags: {model_path: org/model, tp: 2, mem_fraction_static: 0.85}
  search_space: {chunked_prefill_size: [4096, 8192]}
  port: 30000
benchmark:
  qps: {lower: 2, upper: 16, tolerance: 0.5}
  max_concurrency: [64, 128]
  sla: {max_ttft_ms: 2000, max_tpot_ms: 80}
  seed: 7
  warmup_requests: 3
  backend: sglang-oai
dataset: {kind: random, random_input_len: 1024, random_output_len: [256, 512], num_prompts: 200}
search: {tier: 2, max_candidates: 3, max_duration_hours: 1, resume: true}
speculative: {enabled: true, draft_model_path: d}
"""


def write(tmp_path, text: str):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_the_benchmark_sla_and_dataset_parts_become_bench_settings_and_the_rest_is_noted(tmp_path, capsys):
    plan = load_plan(write(tmp_path, FULL))
    b = plan.baseline.bench
    assert (b.find_max_load, b.request_rate, b.slo_ttft_ms, b.slo_tpot_ms) == (True, 2.0, 2000.0, 80.0)
    assert (b.max_concurrency, b.seed, b.warmup_requests) == (64, 7, 3)
    assert (b.workload, b.input_tokens, b.max_new_tokens, b.requests_per_run) == ("synthetic", 1024, 256, 200)
    assert plan.baseline.argv()[:4] == ["python3", "-m", "sglang.launch_server", "--trust-remote-code"]
    assert "--tp-size" in plan.baseline.argv() and plan.baseline.model == "org/model"
    assert all(t.bench == b for t in plan.trials) and len(plan.all()) == 3
    notes = capsys.readouterr().err.splitlines()
    assert all(line.startswith(f"note: {tmp_path / 'cfg.yaml'}:") for line in notes), notes
    said = "\n".join(notes)
    for part in (":7: server.port: not read", ":9: benchmark.qps: searched by tuiapp's --find-max-load from 2",
                 ":10: benchmark.max_concurrency: tuiapp runs one cap per plan: 64",
                 ":11: benchmark.sla: read as tuiapp's SLO", ":14: benchmark.backend: drives SGLang's bench_serving",
                 ":15: dataset.random_output_len: auto_benchmark makes one scenario per value",
                 ":16: search.tier: tier 2", ":16: search.resume: not read", ":17: speculative: its second stage"):
        assert part in said, part


@pytest.mark.parametrize("qps, sweep, rate", [
    ("[1, 2, 4]", (1.0, 2.0, 4.0), None),
    ("{values: [0.5, 8]}", (0.5, 8.0), None),
    ("3", (), 3.0),
    ("{lower: 1, upper: 16}", (1.0, 16.0), None),  # no sla: every rate passes, both ends are run
])
def test_the_rates_are_a_sweep_or_one_open_loop_point(tmp_path, qps, sweep, rate):
    plan = load_plan(write(tmp_path, f"server: {{base_flags: {{model_path: m}}}}\nbenchmark: {{qps: {qps}}}\n"))
    b = plan.baseline.bench
    assert (b.sweep_values, b.request_rate, b.find_max_load) == (sweep, rate, False)


@pytest.mark.parametrize("text, where, says", [
    ("server: [a, b]\n", ":1: server:", "expected a mapping"),
    ("benchmark: {qps: 1}\n", ":1: server:", "required"),
    ("server:\n  base_flags:\n    tp: {a: 1}\n", ":3: server.base_flags.tp:", "a single value"),
    ("server:\n  search_space: {x: []}\n", ":2: server.search_space.x:", "lists no value"),
    ("server: {}\nbenchmark:\n  qps: {lower: 4}\n", ":3: benchmark.qps:", "needs lower and upper"),
    ("server: {}\nbenchmark:\n  qps: {lower: 4, upper: 2}\n", ":3: benchmark.qps:", "must be above lower"),
    ("server: {}\nbenchmark:\n  qps: [1, -2]\n", ":3: benchmark.qps:", "number > 0, not -2"),
    ("server: {}\nbenchmark:\n  qps: fast\n", ":3: benchmark.qps:", "number > 0, not 'fast'"),
    ("server: {}\nbenchmark:\n  sla: {max_p99_ms: 3}\n", ":3: benchmark.sla.max_p99_ms:", "unknown goal"),
    ("server: {}\nbenchmark:\n  max_concurrency: 2.5\n", ":3: benchmark.max_concurrency:", "whole number"),
    ("server: {}\nbenchmark: {seed: x}\n", ":2: benchmark.seed:", "whole number >= 0"),
    ("server: {launch: false}\n", ":1: server.launch:", "tuiapp attach URL"),
    ("server: {command_prefix: {a: 1}}\n", ":1: server.command_prefix:", "a string or a list"),
    ("server: {}\ndataset: {kind: random, random_input_len: x}\n", ":2: dataset.random_input_len:", "whole number"),
    ("server: {}\nsearch: {tier: 5}\n", ":2: search.tier:", "1, 2 or 3"),
    ("server: {}\nsearch:\n  max_candidates: 0\n", ":3: search.max_candidates:", "number > 0"),
    ("server: {}\nbenchmark: 7\n", ":2: benchmark:", "expected a mapping"),
])
def test_a_malformed_config_is_one_line_naming_the_line_and_field(tmp_path, text, where, says):
    with pytest.raises(PlanError) as exc:
        load_plan(write(tmp_path, text))
    message = str(exc.value)
    assert len(message.splitlines()) == 1 and message.startswith(str(tmp_path / "cfg.yaml"))
    assert where in message and says in message, message


def test_tuiapp_trials_exits_2_with_one_line_for_a_malformed_config(tmp_path):
    path = write(tmp_path, "server:\n  base_flags: {model_path: m}\nbenchmark:\n  sla: {max_ttft_ms: soon}\n")
    done = subprocess.run([sys.executable, "-m", "tuiapp", "trials", str(path), "--dry-run"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"tuiapp trials: error: {path}:4: benchmark.sla.max_ttft_ms:"
                                                " expected a number > 0, not 'soon'"], done.stderr
