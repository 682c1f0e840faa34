"""`sglang serve` as it is in 2026 (positional model path, --model-type, a --help that prints the
diffusion server's flags too) and the 2026 flag renames, each with its PR."""

import sys
from pathlib import Path

import pytest

from tuiapp.server import flag_renames
from tuiapp.server.preflight import check_flags, parse_help, preflight
from tuiapp.server.serve_cli import DIFFUSION_MARK, LLM_MARK, help_section, serve_flags

DATA = Path(__file__).parent / "data" / "server"
LLM_HELP = (DATA / "help_sglang_0.5.23.txt").read_text()
DIFFUSION_HELP = """usage: sglang serve [-h] --model-path MODEL_PATH [--num-gpus NUM_GPUS] [--sp-degree SP_DEGREE]

SGLang Diffusion Model Serving

options:
  -h, --help            show this help message and exit
  --model-path MODEL_PATH
                        The model.
  --num-gpus NUM_GPUS   GPUs to use.
  --sp-degree SP_DEGREE
                        Sequence parallel degree.
"""
# what main's cli/serve.py prints for `sglang serve --help`
SERVE_HELP = ("Usage: sglang serve <model-name-or-path> [additional-arguments]\n"
              "Optional override: --model-type {auto,llm,diffusion} (default: auto).\n"
              f"\n{LLM_MARK}\n{LLM_HELP}\n{DIFFUSION_MARK}\n{DIFFUSION_HELP}")


def test_serve_flags_take_the_positional_model_and_the_backend_selector_out():
    assert serve_flags(["/models/k", "--tp", "8", "--model-type", "llm"]) == (["--model-path", "/models/k", "--tp", "8"], "llm")
    assert serve_flags(["--model-type=diffusion", "--model-path", "m"]) == (["--model-path", "m"], "diffusion")
    assert serve_flags(["--tp", "8"]) == (["--tp", "8"], "auto")


def test_help_sections_keep_the_llm_and_diffusion_flags_apart():
    llm = parse_help(help_section(SERVE_HELP, "auto"))
    assert "--tp-size" in llm and "--sp-degree" not in llm and "--model-type" not in llm
    diffusion = parse_help(help_section(SERVE_HELP, "diffusion"))
    assert "--sp-degree" in diffusion and "--tp-size" not in diffusion
    assert help_section(SERVE_HELP, "my-plugin") is None
    assert help_section(LLM_HELP, "llm") == LLM_HELP  # one backend's help (or an older serve): all of it


@pytest.fixture
def sglang_cli(tmp_path):
    """An `sglang` program that prints main's `serve --help` (and nothing else)."""
    (tmp_path / "help.txt").write_text(SERVE_HELP)
    script = tmp_path / "sglang"
    script.write_text(f"#!{sys.executable}\nimport sys, pathlib\n"
                      f"assert sys.argv[1:] == ['serve', '--help'], sys.argv\n"
                      f"sys.stdout.write(pathlib.Path({str(tmp_path / 'help.txt')!r}).read_text())\n")
    script.chmod(0o755)
    return str(script)


def test_preflight_of_sglang_serve_checks_llm_flags_only(sglang_cli):
    # positional model path: no "required --model-path missing"; --model-type is serve's own
    assert preflight([sglang_cli, "serve", "/models/Kimi-K2.5", "--tp", "8", "--model-type", "llm"]) == []
    (p,) = preflight([sglang_cli, "serve", "/models/Kimi-K2.5", "--sp-degree", "2"])
    assert p.severity == "error" and p.flag == "--sp-degree"  # a diffusion flag is no LLM flag
    assert preflight([sglang_cli, "serve", "/models/flux", "--model-type", "diffusion", "--sp-degree", "2"]) == []
    (note,) = preflight([sglang_cli, "serve", "m", "--model-type", "my-plugin", "--whatever"])
    assert note.severity == "note" and "my-plugin" in note.message


# main's parser (sgl-project/sglang server_args.py): per-phase CUDA graph flags, the old ones as
# deprecated aliases (some hidden) until #38375 removed those with a replacement
MAIN = {**{flag: "" for flag in ("--model-path", "--cuda-graph-backend-decode", "--cuda-graph-backend-prefill",
                                 "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill", "--cuda-graph-bs-prefill",
                                 "--cuda-graph-tc-compiler", "--incremental-streaming-output",
                                 "--speculative-draft-window-size")},
        "--piecewise-cuda-graph-max-tokens": "Deprecated alias for --cuda-graph-max-bs-prefill.",
        "--stream-output": "[Deprecated] Use --incremental-streaming-output instead."}


@pytest.mark.parametrize(("flag", "replacement", "pr"), [
    ("--piecewise-cuda-graph-compiler", "--cuda-graph-tc-compiler", flag_renames.CUDA_GRAPH_REFACTOR),
    ("--piecewise-cuda-graph-tokens", "--cuda-graph-bs-prefill", flag_renames.CUDA_GRAPH_REFACTOR),
    ("--disable-piecewise-cuda-graph", "--cuda-graph-backend-prefill=disabled", flag_renames.CUDA_GRAPH_REFACTOR),
    ("--enforce-piecewise-cuda-graph", "--cuda-graph-backend-prefill=tc_piecewise", flag_renames.DEPRECATED_CLEANUP),
    ("--disable-cuda-graph", "--cuda-graph-backend-decode=disabled --cuda-graph-backend-prefill=disabled",
     flag_renames.CUDA_GRAPH_REFACTOR),
])
def test_2026_renames_name_the_new_spelling_and_the_pr_on_main(flag, replacement, pr):
    (p,) = check_flags([flag], MAIN)
    assert p.suggestion == replacement and pr in p.message


def test_deprecated_aliases_main_still_lists_are_warnings_and_hidden_ones_too():
    got = {p.flag: p for p in check_flags(["--piecewise-cuda-graph-max-tokens", "8192", "--stream-output",
                                           "--speculative-dflash-draft-window-size", "8"], MAIN)}
    assert {p.severity for p in got.values()} == {"warning"}
    assert got["--piecewise-cuda-graph-max-tokens"].suggestion == "--cuda-graph-max-bs-prefill"
    assert got["--stream-output"].suggestion == "--incremental-streaming-output"
    assert got["--speculative-dflash-draft-window-size"].suggestion == "--speculative-draft-window-size"


def test_every_2026_rename_carries_its_pr():
    for flag in ("--disable-piecewise-cuda-graph", "--enable-breakable-cuda-graph", "--enforce-piecewise-cuda-graph",
                 "--piecewise-cuda-graph-max-tokens", "--piecewise-cuda-graph-tokens",
                 "--piecewise-cuda-graph-compiler", "--stream-output", "--speculative-dflash-draft-window-size"):
        assert all(r.pr and r.pr.startswith("sgl-project/sglang#") for r in flag_renames.RENAMES[flag]), flag
