import subprocess
import sys
from pathlib import Path

import pytest
from stand_ins import fake_sglang, runs_of

from tuiapp.server.preflight import check_flags, parse_help, preflight, split_command

DATA = Path(__file__).parent / "data" / "server"
ARGPARSE_SERVER = str(DATA / "argparse_server.py")
NEW = parse_help((DATA / "help_sglang_0.5.23.txt").read_text())
OLD = parse_help((DATA / "help_sglang_0.5.2.txt").read_text())

# The campaign's old baseline, as typed for SGLang before 0.5.23.
OLD_BASELINE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--port", "8000",
                "--cuda-graph-max-bs", "512", "--mem-fraction-static", "0.88",
                "--num-continuous-decode-steps", "4"]


def by_flag(problems):
    return {p.flag: p for p in problems}


def test_help_parser_reads_aliases_choices_and_both_section_titles():
    assert {"--model-path", "--model", "--tp-size", "--tensor-parallel-size", "-h", "--help"} <= NEW.keys()
    assert "--moe-runner-backend" in NEW and "--cuda-graph-bs-decode" in NEW
    assert "deprecated" in NEW["--disable-cuda-graph"].lower()
    assert "--disable-decode-cuda-graph" in NEW["--disable-cuda-graph"]  # wrapped at a hyphen, rejoined
    assert "--cuda-graph-max-bs" in OLD and "--cuda-graph-max-bs-decode" not in OLD
    assert "--model" not in OLD  # older releases have no alias
    # nothing from the help *text* leaks in as an option
    assert "--enable-metrics-for-all-schedulers" in NEW
    assert all(opt.startswith("-") and "," not in opt and "{" not in opt for opt in NEW)


def test_old_baseline_on_0_5_23_names_the_new_spelling():
    problems = check_flags(OLD_BASELINE, NEW)
    assert len(problems) == 1
    p = problems[0]
    assert (p.severity, p.flag, p.suggestion) == ("error", "--cuda-graph-max-bs", "--cuda-graph-max-bs-decode")
    assert "ambiguous" in p.message and "--cuda-graph-max-bs-prefill" in p.message


def test_old_baseline_is_clean_on_an_older_release():
    assert check_flags(OLD_BASELINE, OLD) == []


def test_deprecated_shims_on_0_5_23_are_warnings_with_the_replacement():
    problems = by_flag(check_flags(
        ["--disable-cuda-graph", "--enable-flashinfer-allreduce-fusion", "--enable-dp-attention"], NEW))
    assert {p.severity for p in problems.values()} == {"warning"}
    assert problems["--disable-cuda-graph"].suggestion == "--disable-decode-cuda-graph --disable-prefill-cuda-graph"
    assert problems["--enable-flashinfer-allreduce-fusion"].suggestion == "--flashinfer-allreduce-fusion-backend auto"
    assert problems["--enable-dp-attention"].suggestion == "--attn-dp-size"


def test_new_spellings_on_an_older_release_point_back():
    problems = by_flag(check_flags(
        ["--cuda-graph-max-bs-decode", "128", "--cuda-graph-bs-decode", "1", "2", "4",
         "--attn-dp-size", "8", "--flashinfer-allreduce-fusion-backend", "auto",
         "--cuda-graph-max-bs-prefill", "64", "--model", "m"], OLD))
    assert problems["--cuda-graph-max-bs-decode"].suggestion == "--cuda-graph-max-bs"
    assert problems["--cuda-graph-bs-decode"].suggestion == "--cuda-graph-bs"
    assert problems["--attn-dp-size"].suggestion == "--enable-dp-attention"
    assert problems["--flashinfer-allreduce-fusion-backend"].suggestion == "--enable-flashinfer-allreduce-fusion"
    assert problems["--cuda-graph-max-bs-prefill"].suggestion is None
    assert "drop it" in problems["--cuda-graph-max-bs-prefill"].message
    assert problems["--model"].suggestion == "--model-path" and "ambiguous" in problems["--model"].message
    assert {p.severity for p in problems.values()} == {"error"}


def test_typos_get_the_closest_option_and_values_are_not_flags():
    problems = check_flags(
        ["--mem-fracton-static", "0.8", "--chunked-prefill-size", "-1", "--cuda-graph-bs-decode", "1", "2",
         "--speculative-algoritm=EAGLE3", "--port=8000", "--xyzzy"], NEW)
    got = {p.flag: p.suggestion for p in problems}
    assert got == {"--mem-fracton-static": "--mem-fraction-static",
                   "--speculative-algoritm": "--speculative-algorithm", "--xyzzy": None}
    assert all(p.severity == "error" and "unrecognized" in p.message for p in problems)


def test_unique_abbreviations_pass_but_a_silent_remap_is_flagged():
    assert check_flags(["--tp", "8", "--mem-frac", "0.8", "--dp", "2"], NEW) == []
    # An old flag that argparse would quietly read as a different option.
    options = {k: v for k, v in OLD.items() if k != "--disable-cuda-graph"}
    options["--disable-cuda-graph-padding"] = "Disable cuda graph when padding is needed."
    (p,) = check_flags(["--disable-cuda-graph"], options)
    assert p.severity == "warning" and "--disable-cuda-graph-padding" in p.message


@pytest.mark.parametrize("profile,help_options", [("0.5.23", NEW), ("0.5.2", OLD)])
@pytest.mark.parametrize("flags", [
    OLD_BASELINE,
    ["--model-path", "m", "--cuda-graph-max-bs-decode", "128", "--cuda-graph-bs-decode", "1", "2"],
    ["--model-path", "m", "--mem-fracton-static", "0.8"],
    ["--model", "m", "--tp", "8", "--chunked-prefill-size", "-1"],
    ["--model-path", "m", "--cuda-graph-bs", "1", "2", "--disable-cuda-graph"],
])
def test_errors_agree_with_what_argparse_itself_does(profile, help_options, flags):
    result = subprocess.run([sys.executable, ARGPARSE_SERVER, profile, *flags], capture_output=True, text=True)
    argparse_rejects = result.returncode != 0
    ours_rejects = any(p.severity == "error" for p in check_flags(flags, help_options))
    assert ours_rejects == argparse_rejects, result.stderr


def test_split_command_handles_module_script_and_subcommand_forms():
    assert split_command([sys.executable, "-u", "-m", "sglang.launch_server", "--port", "1"]) == (
        [sys.executable, "-u", "-m", "sglang.launch_server"], ["--port", "1"])
    assert split_command(["sglang", "serve", "--model-path", "m"]) == (["sglang", "serve"], ["--model-path", "m"])
    assert split_command(["python3", "-X", "dev", "x.py", "0.5.2", "--tp", "2"]) == (
        ["python3", "-X", "dev", "x.py", "0.5.2"], ["--tp", "2"])
    assert split_command(["uv", "run", "python", "-m", "tuiapp.sim.server", "--port", "1"]) == (
        ["uv", "run", "python", "-m", "tuiapp.sim.server"], ["--port", "1"])


SGLANG = [sys.executable, "-m", "sglang.launch_server"]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Make a stand-in the installed SGLang: ``installed(profile=..)`` or ``installed(output=.., code=..)``."""
    from tuiapp.server import preflight as preflight_module

    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})

    def install(**kwargs):
        root = fake_sglang(tmp_path / f"site{len(list(tmp_path.glob('site*')))}", **kwargs)
        monkeypatch.setenv("PYTHONPATH", str(root))
        return root

    return install


def test_preflight_runs_the_servers_own_help_in_a_subprocess(installed):
    root = installed(profile="0.5.23")
    problems = preflight([*SGLANG, *OLD_BASELINE], timeout_s=30)
    assert [(p.flag, p.suggestion) for p in problems] == [("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode")]
    assert runs_of(root) == ["--help"]
    installed(profile="0.5.2")
    assert preflight([sys.executable, "-u", "-m", "sglang.launch_server", *OLD_BASELINE], timeout_s=30) == []


def test_preflight_says_so_when_the_server_cannot_even_print_help():
    (p,) = preflight([sys.executable, "-m", "sglang.launch_server", "--tp", "8"])
    assert p.severity == "error" and "No module named" in p.message
    assert "is SGLang installed" in p.suggestion
    (p,) = preflight(["no-such-dir/sglang", "serve", "--tp", "8"])
    assert p.severity == "error" and "sglang" in p.message


def test_preflight_times_out_on_a_hanging_help(installed):
    installed(source="import time\ntime.sleep(30)\n")
    (p,) = preflight([*SGLANG, "--port", "1"], timeout_s=0.5)
    assert "did not finish within 0.5 s" in p.message


def test_a_missing_required_option_is_reported(installed):
    installed(profile="0.5.23")
    (p,) = preflight([*SGLANG, "--tp", "8"], timeout_s=30)
    assert (p.severity, p.flag) == ("error", "--model-path") and "required" in p.message
    assert preflight([*SGLANG, "--model", "m"], timeout_s=30) == []
