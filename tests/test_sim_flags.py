"""Simulator flags: both SGLang spellings, argparse's failure, --help, and the campaign model."""

import subprocess
import sys

import pytest

from tuiapp.sim.args import parse_args
from tuiapp.sim.model import expected_tok_s, plan_for

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
OLD_KNOBS = ["--cuda-graph-max-bs", "512", "--mem-fraction-static", "0.88", "--num-continuous-decode-steps", "4"]


def test_prefix_abbreviation_and_aliases():
    ns = parse_args(["--model", "m", "--tp", "8", "--ep", "2", "--dp", "1"])
    assert (ns.model_path, ns.tp_size, ns.ep_size, ns.dp_size) == ("m", 8, 2, 1)
    assert parse_args(["--model-path", "m", "--tensor-parallel-size", "4"]).tp_size == 4
    assert parse_args(["--model-path", "m", "--speculative-draft-model", "d"]).speculative_draft_model_path == "d"


def test_old_and_new_cuda_graph_spellings_give_the_same_plan():
    old = plan_for(parse_args(BASE + ["--cuda-graph-max-bs", "512"]), {})
    new = plan_for(parse_args(BASE + ["--cuda-graph-max-bs-decode", "512"]), {})
    cfg = plan_for(parse_args(BASE + ["--cuda-graph-config", '{"decode": {"max_bs": 512}}']), {})
    assert old.cuda_graph_max_bs == new.cuda_graph_max_bs == cfg.cuda_graph_max_bs == 512
    assert old.step_s == new.step_s == cfg.step_s
    assert old.capture_bs[-1] == 512
    for flag in (["--disable-cuda-graph"], ["--disable-decode-cuda-graph"], ["--cuda-graph-backend-decode", "disabled"]):
        assert plan_for(parse_args(BASE + flag), {}).cuda_graph is False


def test_unknown_flag_fails_like_argparse():
    r = subprocess.run([sys.executable, "-m", "tuiapp.sim.server", *BASE, "--bogus-flag", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: ")
    assert "error: unrecognized arguments: --bogus-flag 1" in r.stderr


def test_help_lists_flags_in_argparse_format():
    r = subprocess.run([sys.executable, "-m", "tuiapp.sim.server", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    out = r.stdout
    for needle in ("--tp-size TP_SIZE, --tensor-parallel-size TP_SIZE", "--cuda-graph-max-bs-decode CUDA_GRAPH_MAX_BS_DECODE",
                   "--cuda-graph-max-bs CUDA_GRAPH_MAX_BS", "--enable-torch-symm-mem", "--speculative-algorithm SPECULATIVE_ALGORITHM",
                   "--sim-fault KIND[@SECONDS]", "--api-key API_KEY"):
        assert needle in out, needle


def test_campaign_rates():
    assert expected_tok_s(BASE) == pytest.approx(89.5, abs=1e-9)
    assert expected_tok_s(BASE + OLD_KNOBS) == pytest.approx(82.0, abs=1e-9)
    eagle = BASE + ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lmsys/eagle3"]
    assert 53.0 < expected_tok_s(eagle) < 55.0
    assert 2.5 < plan_for(parse_args(eagle), {}).mean_accept_len < 3.5
    assert expected_tok_s(BASE, {"SGLANG_FORCE_CUSTOM_ALLREDUCE": "1"}) == pytest.approx(38.0, abs=1e-9)


def test_each_knob_alone_gives_a_distinct_rate_between_the_baselines():
    singles = [expected_tok_s(BASE + OLD_KNOBS[i:i + 2]) for i in (0, 2, 4)]
    assert len({round(x, 3) for x in singles}) == 3
    assert all(82.0 < x < 89.5 for x in singles)
    # the three step costs add up exactly to the old baseline
    gaps = sum(1 / x - 1 / 89.5 for x in singles)
    assert 1 / 89.5 + gaps == pytest.approx(1 / 82.0, rel=1e-9)


@pytest.mark.parametrize("extra,env,failure", [
    (["--enable-flashinfer-allreduce-fusion"], {}, "flashinfer_jit_sm120"),
    (["--flashinfer-allreduce-fusion-backend", "trtllm"], {}, "flashinfer_jit_sm120"),
    (["--enable-torch-symm-mem"], {}, "torch_symm_mem_keyerror"),
    (["--moe-runner-backend", "flashinfer_cutlass", "--moe-a2a-backend", "flashinfer"], {}, "ep_flashinfer_assert_oom"),
    ([], {"NCCL_ALGO": "Tree"}, "nccl_tree_graph"),
    (["--mem-fraction-static", "0.98"], {}, "graph_capture_oom"),
    (["--mem-fraction-static", "0.60"], {}, "kv_not_enough"),
])
def test_failing_trials_are_modelled(extra, env, failure):
    assert plan_for(parse_args(BASE + extra), env).failure == failure
    assert expected_tok_s(BASE + extra, env) is None


def test_nccl_tree_runs_without_cuda_graphs():
    assert expected_tok_s(BASE + ["--disable-cuda-graph"], {"NCCL_ALGO": "Tree"}) == pytest.approx(89.5 / 1.6)


def test_custom_allreduce_floods_pcie():
    default = plan_for(parse_args(BASE), {})
    forced = plan_for(parse_args(BASE), {"SGLANG_FORCE_CUSTOM_ALLREDUCE": "1"})
    rate = lambda p: p.pcie_bytes_per_step(1) / p.step_s  # noqa: E731
    assert 0.3e9 < rate(default) < 1e9
    assert rate(forced) > 20 * rate(default)
    assert plan_for(parse_args(BASE + ["--disable-custom-all-reduce"]), {"SGLANG_FORCE_CUSTOM_ALLREDUCE": "1"}).custom_ar is False


def test_memory_plan_follows_the_knobs():
    new = plan_for(parse_args(BASE), {})
    old = plan_for(parse_args(BASE + OLD_KNOBS), {})
    assert old.mem.kv_gib > new.mem.kv_gib and old.kv_tokens > new.kv_tokens
    assert old.mem.graphs_gib > new.mem.graphs_gib
    assert new.mem.used_ready_gib < new.mem.total_gib * 0.80


def test_speculative_args_assertion_exits_1():
    r = subprocess.run([sys.executable, "-m", "tuiapp.sim.server", *BASE, "--speculative-algorithm", "EAGLE3",
                        "--speculative-eagle-topk", "2", "--sim-speed", "50"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr.rstrip().endswith("AssertionError")
    assert "Traceback (most recent call last):" in r.stderr
