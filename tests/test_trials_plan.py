"""Plan files: validation errors name file:line:field; diffs on the effective configuration;
confound warnings; --isolate generates the one-knob trials."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuiapp.cli import main
from tuiapp.trials.diff import config_diff, confound_warning, diff_dict, knobs
from tuiapp.trials.isolate import isolate_trials
from tuiapp.trials.plan import PlanError, load_plan
from tuiapp.trials.plans import plan_path, reference_plan_path

DATA = Path(__file__).parent / "data" / "trials"


@pytest.mark.parametrize(
    ("name", "line", "field", "words"),
    [
        ("bad_runs.toml", 14, "trial[1].bench.runs", "greater than or equal to 1"),
        ("bad_unknown_field.toml", 6, "baseline.timeouts.rnu_s", "unknown field"),
        ("bad_inline.toml", 6, "trial[0].bench.runs", "valid integer"),
        ("bad_base.toml", 6, "trial[0].base", "no earlier trial named 'nope'"),
        ("bad_name.toml", 8, "trial[1].name", "without '/'"),
    ],
)
def test_validation_error_names_file_line_and_field(name, line, field, words):
    path = DATA / name
    with pytest.raises(PlanError) as err:
        load_plan(path)
    text = str(err.value)
    assert text.startswith(f"{path}:{line}: {field}: "), text
    assert words in text
    assert "\n" not in text


def test_toml_syntax_error_has_line():
    with pytest.raises(PlanError, match=r"bad_syntax\.toml:3: TOML syntax: "):
        load_plan(DATA / "bad_syntax.toml")


def test_cli_prints_one_line_and_exits_2(capsys):
    assert main(["trials", str(DATA / "bad_runs.toml"), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "bad_runs.toml:14: trial[1].bench.runs:" in err


def test_trials_inherit_and_diff_on_effective_config():
    plan = load_plan(DATA / "two_knobs.toml")
    base = plan.baseline
    same, renamed, two, on_two, scratch = plan.trials
    # Alias (--tp-size vs tp) and an operational flag (port) are no change at all.
    assert config_diff(base, same) == []
    # Renamed spelling with the same value, and the default value, are no change either,
    # but the launched command keeps the user's spelling.
    assert config_diff(base, renamed) == []
    assert "--cuda-graph-max-bs-decode" in renamed.argv() and "--cuda-graph-max-bs" not in renamed.argv()
    changes = config_diff(base, two)
    assert diff_dict(changes) == {
        "cuda-graph-max-bs": {"baseline": "512", "trial": "128"},
        "env:NCCL_ALGO": {"baseline": None, "trial": "Tree"},
    }
    warning = confound_warning(two.name, changes)
    assert warning and "2 knobs" in warning and "--isolate two" in warning
    # A trial built on another is still diffed against the baseline; speculative-* is one knob.
    assert set(knobs(config_diff(base, on_two))) == {"cuda-graph-max-bs", "env:NCCL_ALGO", "speculative"}
    assert on_two.env == {"NCCL_ALGO": "Tree"}
    assert scratch.command == ("sglang", "serve") and "tp-size" not in scratch.flags
    assert "command" in diff_dict(config_diff(base, scratch))


def test_single_knob_trial_has_no_confound_warning():
    plan = load_plan(reference_plan_path())
    by_name = {t.name: t for t in plan.trials}
    for name in ["eagle3", "flashinfer-allreduce-fusion", "torch-symm-mem", "nccl-tree", "ep-flashinfer-a2a",
                 "custom-allreduce-pcie"]:
        assert plan.reference(by_name[name]).name == "new-baseline"
        changes = config_diff(plan.reference(by_name[name]), by_name[name])
        assert changes, name
        assert confound_warning(name, changes, plan.knob_groups) is None, name
    changes = config_diff(plan.baseline, by_name["new-baseline"])
    assert set(knobs(changes, plan.knob_groups)) == {
        "cuda-graph-max-bs", "mem-fraction-static", "num-continuous-decode-steps"}
    assert confound_warning("new-baseline", changes, plan.knob_groups)


def test_isolate_generates_baseline_each_knob_then_combined():
    plan = load_plan(reference_plan_path())
    trials = isolate_trials(plan, "new-baseline")
    assert [t.name for t in trials] == [
        "old-baseline",
        "new-baseline/cuda-graph-max-bs",
        "new-baseline/mem-fraction-static",
        "new-baseline/num-continuous-decode-steps",
        "new-baseline",
    ]
    for t in trials[1:-1]:
        changes = config_diff(plan.baseline, t)
        assert [c.key for c in changes] == [t.knob], t.name  # exactly one knob each
        combined = {c.key: c.trial for c in config_diff(plan.baseline, trials[-1])}
        assert changes[0].trial == combined[t.knob]
    with pytest.raises(KeyError):
        isolate_trials(plan, "nope")
    with pytest.raises(KeyError):
        isolate_trials(plan, "old-baseline")


def test_isolate_of_a_grouped_knob_keeps_the_group_together():
    plan = load_plan(reference_plan_path())
    trials = isolate_trials(plan, "ep-flashinfer-a2a")
    # compared with (and built on) the new baseline, its reference
    assert [t.name for t in trials] == ["new-baseline", "ep-flashinfer-a2a/expert-parallel-flashinfer",
                                        "ep-flashinfer-a2a"]
    assert trials[1].base == "new-baseline"
    assert [c.key for c in config_diff(trials[0], trials[1])] == [
        "ep-size", "moe-runner-backend", "moe-a2a-backend"]


def test_check_prints_diffs_and_warning(capsys):
    assert main(["trials", "campaign", "--check"]) == 0
    out = capsys.readouterr().out
    assert "new-baseline: 3 knob(s)" in out and "warning: new-baseline changes 3 knobs" in out
    assert main(["trials", "campaign", "--isolate", "nope", "--check"]) == 2


def test_bench_and_timeouts_merge_field_by_field():
    plan = load_plan(DATA / "sim_short.toml")
    custom = plan.get("custom-ar")
    assert custom.bench.max_new_tokens == 12 and custom.bench.runs == 3 and custom.bench.warmup_requests == 1
    assert custom.timeouts.ready_s == 60 and custom.env == {"SGLANG_FORCE_CUSTOM_ALLREDUCE": "1"}
    # built on "new": its flags, not the old baseline's
    assert custom.flags["cuda-graph-max-bs"].value == "128" and "mem-fraction-static" not in custom.flags
    assert plan.with_references(["custom-ar"]) == [plan.baseline, plan.get("new"), custom]


def test_the_docs_example_plan_is_valid(tmp_path):
    section = (Path(__file__).parent.parent / "docs" / "trials.md").read_text()
    start = section.index("```toml\n") + len("```toml\n")
    example = tmp_path / "example.toml"
    example.write_text(section[start:section.index("```", start)])
    plan = load_plan(example)
    assert [t.name for t in plan.all()] == ["baseline", "nccl-tree", "no-cap"]
    assert [c.key for c in config_diff(plan.baseline, plan.get("no-cap"))] == ["cuda-graph-max-bs"]


def test_a_folder_named_like_a_shipped_plan_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "campaign").mkdir()
    assert plan_path("campaign") == reference_plan_path()
    (tmp_path / "mine").write_text("")
    assert plan_path("mine") == Path("mine")
