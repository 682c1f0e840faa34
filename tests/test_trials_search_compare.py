"""Issue 31: a plan's [search.flags] grid, --dry-run, ranking and --resume on the simulator;
`tuiapp compare` of attach recordings of the simulator as a CI gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuiapp.sim.process import SimProcess
from tuiapp.trials.compare import compare, gate, load, primary_verdict
from tuiapp.trials.plan import PlanError, parse_plan

GRID = """
[plan]
name = "grid"
[baseline]
model = "moonshotai/Kimi-K2.5"
flags = {{ tp = 8, cuda-graph-max-bs = 256, mem-fraction-static = 0.88 }}
bench = {{ runs = 2, max_new_tokens = 16, warmup_requests = 0 }}
[search]
order = "{order}"
seed = 3
[search.flags]
cuda-graph-max-bs = [128, 512]
mem-fraction-static = [0.85, 0.88]
"""
COMBOS = {"cuda-graph-max-bs=128,mem-fraction-static=0.85", "cuda-graph-max-bs=128,mem-fraction-static=0.88",
          "cuda-graph-max-bs=512,mem-fraction-static=0.85", "cuda-graph-max-bs=512,mem-fraction-static=0.88"}


def tuiapp(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", *args], capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)


def grid(tmp_path: Path, order: str = "grid") -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(GRID.format(order=order))
    return path


@pytest.mark.slow
def test_a_2x2_grid_is_4_trials_in_dry_run(tmp_path):
    out = tuiapp("trials", str(grid(tmp_path)), "--dry-run")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("baseline: python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5")
    names = [line.split(": ", 1)[0] for line in lines[1:]]
    assert set(names) == COMBOS and len(names) == 4
    assert "--cuda-graph-max-bs 128 --mem-fraction-static 0.85" in lines[1]
    shuffled = tuiapp("trials", str(grid(tmp_path, "random")), "--dry-run").stdout.strip().splitlines()
    assert {line.split(": ", 1)[0] for line in shuffled[1:]} == COMBOS and shuffled[1:] != lines[1:]


def test_a_bad_search_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GRID.format(order="grid").replace("[128, 512]", "[]"))
    out = tuiapp("trials", str(bad), "--dry-run")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "search.flags" in out.stderr and "at least one value" in out.stderr


def test_a_combination_equal_to_the_baseline_is_the_baseline(tmp_path):
    text = GRID.format(order="grid").replace("cuda-graph-max-bs = 256", "cuda-graph-max-bs = 512")
    plan = parse_plan(text, tmp_path / "p.toml")
    assert len(plan.trials) == 3 and "cuda-graph-max-bs=512,mem-fraction-static=0.88" not in plan.search.names
    with pytest.raises(PlanError, match="unknown field"):
        parse_plan(text.replace("seed = 3", "sed = 3"), tmp_path / "p.toml")


@pytest.mark.slow
def test_the_grid_runs_to_a_ranked_ledger_and_resume_finishes_what_is_left(tmp_path):
    ledger = tmp_path / "ledger.json"
    argv = [sys.executable, "-m", "tuiapp", "trials", str(grid(tmp_path)), "--sim", "--sim-speed", "100",
            "--headless", "--ledger", str(ledger)]
    # stopped midway: after two trials are in the ledger
    job = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if ledger.exists() and len(json.loads(ledger.read_text())) >= 2:
                break
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.05)
        job.send_signal(signal.SIGINT)
        job.wait(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    done_first = {row["name"] for row in json.loads(ledger.read_text())}
    assert 2 <= len(done_first) < 5
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=180,
                             stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    started = {line.split()[3] for line in resumed.stdout.splitlines() if " launching" in line}
    assert started == ({"baseline"} | COMBOS) - done_first  # only what was left
    rows = json.loads(ledger.read_text())
    assert {r["name"] for r in rows} == {"baseline"} | COMBOS and all(r["status"] == "ok" for r in rows)
    ranks = sorted(r["rank"] for r in rows)
    assert ranks == [1, 2, 3, 4, 5]
    best = min(rows, key=lambda r: r["rank"])
    assert best["vs_best"] == "best" and best["mean_decode_tok_s"] == max(r["mean_decode_tok_s"] for r in rows)
    assert "| rank | vs best |" in resumed.stdout
    launch = next(line for line in resumed.stdout.splitlines() if line.startswith("launch it: "))
    assert launch.startswith("launch it: python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5")
    assert "tuiapp.sim" not in launch  # the plan's own command, not the simulator's


OLD = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--cuda-graph-max-bs", "512",
       "--mem-fraction-static", "0.88", "--num-continuous-decode-steps", "4"]
NEW = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--cuda-graph-max-bs", "128"]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Attach recordings of the simulator: the old baseline, the new one, the new one again."""
    folder = tmp_path_factory.mktemp("compare")
    paths = {}
    for name, flags in (("old", OLD), ("new", NEW), ("new2", NEW)):
        sim = SimProcess(flags, speed=100)
        try:
            sim.wait_ready()
            path = folder / f"{name}.jsonl"
            out = tuiapp("attach", sim.url, "--headless", "--telemetry", "off", "--runs", "4",
                         "--max-new-tokens", "48", "--record", str(path), "--summary", str(folder / f"{name}.json"))
            assert out.returncode == 0, out.stdout[-2000:] + out.stderr
        finally:
            sim.proc.terminate()
            sim.proc.wait(10)
        paths[name] = path
    return paths


@pytest.mark.slow
def test_compare_gates_on_slower(recordings):
    faster = tuiapp("compare", str(recordings["old"]), str(recordings["new"]), "--fail-on", "slower")
    assert faster.returncode == 0, faster.stdout + faster.stderr
    assert faster.stdout.strip().endswith("decode_tok_s: faster")
    slower = tuiapp("compare", str(recordings["new"]), str(recordings["old"]), "--fail-on", "slower")
    assert slower.returncode == 1
    assert "decode_tok_s: slower -> exit 1 (--fail-on slower)" in slower.stdout
    same = tuiapp("compare", str(recordings["new"]), str(recordings["new2"]), "--fail-on", "slower")
    assert same.returncode == 0 and same.stdout.strip().endswith("decode_tok_s: within noise"), same.stdout


@pytest.mark.slow
def test_compare_reads_summaries_and_says_it_as_json(recordings):
    old_summary = recordings["old"].with_suffix(".json")
    out = tuiapp("compare", str(old_summary), str(recordings["new"]), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["verdict"] == "faster" and not data["failed"]
    row = next(r for r in data["rows"] if r["metric"] == "decode_tok_s")
    assert row["n_base"] == 4 and row["n_new"] == 4 and row["ci95"][0] > 1.0 and row["ratio"] > 1.05


@pytest.mark.slow
def test_compare_refuses_bad_input_in_one_line(tmp_path, recordings):
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    for args in ((str(junk), str(recordings["new"])), (str(tmp_path / "missing.json"), str(recordings["new"]))):
        out = tuiapp("compare", *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr


def test_compare_pairs_load_points_shared_by_both(tmp_path):
    def summary(path, tok_s, ttft):
        path.write_text(json.dumps({"runs": [{"decode_tok_s": 80.0 + i, "output_tok_s": 60.0} for i in range(3)],
                                    "points": [{"concurrency": c, "output_tok_s": tok_s * c, "ttft_p50_ms": ttft * c}
                                               for c in (1, 4, 16)]}))
        return path

    base, new = summary(tmp_path / "a.json", 100.0, 50.0), summary(tmp_path / "b.json", 110.0, 40.0)
    bg, ng = load(base), load(new)
    rows = compare(bg, ng)
    points = {(r.point, r.metric): r for r in rows if r.point}
    assert set(points) == {(f"concurrency={c}", m) for c in (1, 4, 16) for m in ("output_tok_s", "ttft_p50_ms")}
    assert points[("concurrency=4", "output_tok_s")].ratio == pytest.approx(1.1)
    # a sweep's top-level runs mix three loads: they are never pooled into one verdict, and
    # points without per-run figures cannot be judged
    assert primary_verdict(rows, "decode_tok_s") is None
    result = gate(bg, ng, rows, "decode_tok_s")
    assert result.code == 3 and any("0 run(s) of decode_tok_s at concurrency 16" in r for r in result.reasons)
    assert os.path.exists(base)


AUTO_BENCHMARK = """
server:
  env: {CUDA_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7"}
  base_flags: {model_path: moonshotai/Kimi-K2.5, tp: 8, mem_fraction_static: 0.88}
  search_space:
    cuda_graph_max_bs: [128, 512]
    chunked_prefill_size: [4096, 8192]
search: {tier: 3, max_candidates: 4, max_duration_hours: 2}
benchmark: {qps: {lower: 1, upper: 16}}
"""


@pytest.mark.slow
def test_an_sglang_auto_benchmark_config_is_read_as_a_plan(tmp_path):
    from tuiapp.trials.plan import load_plan

    path = tmp_path / "kimi.yaml"
    path.write_text(AUTO_BENCHMARK)
    plan = load_plan(path)
    assert plan.baseline.model == "moonshotai/Kimi-K2.5" and plan.baseline.env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    assert " ".join(plan.baseline.argv()).endswith("--tp-size 8 --mem-fraction-static 0.88")
    # max_candidates counts the baseline, as auto_benchmark does: 3 of the 4 combinations
    assert plan.search.names == ("cuda-graph-max-bs=128,chunked-prefill-size=4096",
                                 "cuda-graph-max-bs=128,chunked-prefill-size=8192",
                                 "cuda-graph-max-bs=512,chunked-prefill-size=4096")
    assert plan.search.budget_s == 7200.0
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: [unclosed\n")
    out = tuiapp("trials", str(bad), "--dry-run")
    assert out.returncode == 2 and "YAML syntax" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    bad.write_text("benchmark: {qps: 1}\n")
    out = tuiapp("trials", str(bad), "--dry-run")
    assert out.returncode == 2 and "server: required" in out.stderr


def test_objectives_read_a_sweep_point_or_the_max_load():
    from tuiapp.trials.ledger import Ledger, LedgerRow, objective_values

    def row(name, runs_at_8, shares):
        points = [{"concurrency": c, "output_tok_s_runs": runs, "goodput_share": share}
                  for c, runs, share in ((1, [10.0, 10.1], 1.0), (8, runs_at_8, shares[0]), (32, [300.0, 301.0], shares[1]))]
        return LedgerRow(name=name, status="ok", runs_decode_tok_s=[80.0, 80.2], points=points)

    a, b = row("a", [70.0, 70.5], (1.0, 0.5)), row("b", [75.0, 75.4], (1.0, 1.0))
    assert objective_values(a, "output_tok_s@concurrency=8") == [70.0, 70.5]
    assert objective_values(a, "max_load") == [8.0] and objective_values(b, "max_load") == [32.0]
    ledger = Ledger([a, b])
    assert [r.name for r in ledger.rank("output_tok_s@concurrency=8")] == ["b", "a"] and a.vs_best == "slower"
    assert [r.name for r in ledger.rank("max_load")] == ["b", "a"] and a.vs_best == "lower"
    with pytest.raises(PlanError, match="objective"):
        parse_plan(GRID.format(order="grid").replace('seed = 3', 'seed = 3\nobjective = "tok"'), Path("p.toml"))


@pytest.mark.slow
def test_a_search_ranks_by_a_sweep_point(tmp_path):
    plan = tmp_path / "sweep.toml"
    plan.write_text(GRID.format(order="grid").replace(
        "bench = { runs = 2, max_new_tokens = 16, warmup_requests = 0 }",
        'bench = { runs = 2, max_new_tokens = 16, warmup_requests = 0, sweep = "concurrency=1,8" }').replace(
        "seed = 3", 'seed = 3\nobjective = "output_tok_s@concurrency=8"\nmax_candidates = 3'))
    ledger = tmp_path / "l.json"
    out = tuiapp("trials", str(plan), "--sim", "--sim-speed", "100", "--headless", "--ledger", str(ledger),
                 timeout_s=240)
    assert out.returncode == 0, out.stdout[-3000:]
    rows = json.loads(ledger.read_text())
    assert len(rows) == 3 and sorted(r["rank"] for r in rows) == [1, 2, 3]
    best = min(rows, key=lambda r: r["rank"])
    at_8 = {r["name"]: sum(p["output_tok_s_runs"]) / 2 for r in rows for p in r["points"] if p.get("concurrency") == 8}
    assert best["name"] == max(at_8, key=at_8.get)
    assert f"best by output_tok_s@concurrency=8: {best['name']}" in out.stdout


@pytest.mark.slow
def test_a_search_records_refused_and_failed_combinations_and_goes_on(tmp_path):
    plan = tmp_path / "mixed.toml"
    plan.write_text(GRID.format(order="grid").split("[search]")[0] + """[search]
[search.flags]
mem-fraction-static = [0.3, 0.88]
cuda-graph-max-bs-decoed = [false, 64]   # a typo: preflight refuses the combinations that set it
""")
    ledger = tmp_path / "l.json"
    out = tuiapp("trials", str(plan), "--sim", "--sim-speed", "100", "--headless", "--ledger", str(ledger),
                 timeout_s=240)
    assert out.returncode == 0, out.stdout[-3000:]  # the baseline ran: the search's failures are results
    rows = {r["name"]: r for r in json.loads(ledger.read_text())}
    assert set(rows) == {"baseline", "mem-fraction-static=0.3,cuda-graph-max-bs-decoed=off",
                         "mem-fraction-static=0.3,cuda-graph-max-bs-decoed=64",
                         "mem-fraction-static=0.88,cuda-graph-max-bs-decoed=64"}
    for name in ("mem-fraction-static=0.3,cuda-graph-max-bs-decoed=64", "mem-fraction-static=0.88,cuda-graph-max-bs-decoed=64"):
        assert rows[name]["status"] == "preflight" and "--cuda-graph-max-bs-decoed" in rows[name]["first_error"]
    failed = rows["mem-fraction-static=0.3,cuda-graph-max-bs-decoed=off"]
    assert failed["status"] not in ("ok", "preflight") and failed["first_error"] and failed["rank"] is None
    assert rows["baseline"]["rank"] == 1 and rows["baseline"]["vs_best"] == "best"
