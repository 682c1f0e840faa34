"""`tuiapp attach --headless --summary` on the simulator with EAGLE-3, as a user runs it: the
printer's server startup line and run lines with acceptance per position, and the summary file's
per-position figures (within 2 points of the simulator's configured acceptance) and start-up
breakdown, with the start-up work a main-branch server counts after ready."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tuiapp.sim.process import SimProcess

CONFIGURED = (0.9, 0.7, 0.5)  # conditional acceptance of draft positions 1-3


@pytest.mark.slow
def test_attach_headless_shows_startup_phases_and_acceptance_per_position(tmp_path):
    sim = SimProcess(["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--enable-metrics", "--sim-step-ms", "2",
                      "--speculative-algorithm", "EAGLE3", "--sim-spec-accept", ",".join(map(str, CONFIGURED)),
                      "--sim-post-ready-jit-s", "20"],  # 0.2 s at speed 100: the warm-up request waits on it
                     speed=100)
    summary = tmp_path / "s.json"
    try:
        sim.wait_ready(60)
        r = subprocess.run([sys.executable, "-m", "tuiapp", "attach", sim.url, "--headless", "--runs", "3",
                            "--requests-per-run", "4", "--concurrency", "2", "--max-new-tokens", "200",
                            "--telemetry", "off", "--metrics-interval", "0.2", "--summary", str(summary)],
                           capture_output=True, text=True, timeout=120)
    finally:
        sim.stop()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    startup = [line for line in lines if " server " in line and " startup tokenizer_e2e=" in line]
    assert len(startup) == 1 and "load_weight=" in startup[0] and "cuda_graph=" in startup[0]
    runs = [line for line in lines if " run " in line]
    assert len(runs) == 3 and all(" accept_pos=" in line and " accept_cond=" in line for line in runs)
    data = json.loads(summary.read_text())
    assert data["accept_conditional_by_position"] == pytest.approx(CONFIGURED, abs=0.02)
    assert all(len(run["accept_by_position"]) == 3 for run in data["runs"])
    phases = data["server_startup"]["phases_s"]
    assert data["server_startup"]["total_s"] == phases["tokenizer_e2e"] > phases["scheduler_e2e"] > phases["load_weight"] > 0
    assert set(data["server_startup"]["cuda_graph_s"]) >= {"target_verify", "draft_decode"}
    # the main branch's count of start-up work after ready (a lazy JIT), in the summaries
    assert data["server_startup"]["post_startup_s"] == pytest.approx(0.2)
    assert "server startup: tokenizer_e2e=" in r.stdout and "after_ready=0.20s" in r.stdout
