"""Ctrl-C keeps what was measured and exits 130 (issue 40): --find-max-load's answer so far is
printed and in --summary, a sweep's finished points are in --summary, a plan's finished trials
are in the ledger. Each job is a real process sent SIGINT once the first result is printed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuiapp.server.ports import free_port

DATA = Path(__file__).parent / "data" / "trials"


@pytest.fixture(scope="module")
def server_url():
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", "10"],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)


def interrupted(argv: list[str], after: str, cwd: Path, timeout_s: float = 90) -> tuple[int, str]:
    """Run ``tuiapp ARGV``, send SIGINT when a line with ``after`` is printed; (exit code, stdout)."""
    out = cwd / "stdout.txt"
    with out.open("w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "tuiapp", *argv], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=cwd)
    try:
        deadline = time.monotonic() + timeout_s
        while after not in out.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"ended before {after!r}:\n{out.read_text()}"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, out.read_text()


def test_ctrl_c_during_find_max_load_keeps_the_answer_so_far(server_url, tmp_path):
    summary = tmp_path / "s.json"
    code, out = interrupted(["attach", server_url, "--headless", "--telemetry", "off", "--find-max-load",
                             "--slo", "ttft_ms=5000", "--runs", "1", "--max-new-tokens", "30",
                             "--summary", str(summary)], after="probe 1 streams: passed", cwd=tmp_path)
    assert code == 130, out
    # the Ctrl-C lands after the first probe passed, or a later one when the box is quick:
    # the answer so far is the largest probe that passed
    passed = [int(n) for n in re.findall(r"probe (\d+) streams: passed", out)]
    assert passed and min(passed) == 1, out
    assert f"max load meeting the SLO: at least {max(passed)} streams" in out, out
    assert "(interrupted: the answer so far)" in out
    data = json.loads(summary.read_text())
    assert data["interrupted"] is True and data["max_load"]["complete"] is False
    assert data["max_load"]["concurrency"] >= 1 and data["max_load"]["probes"] == len(data["points"]) >= 1
    assert "error" not in out.lower().split("summary:")[-1]  # no "points lost" failure for a Ctrl-C


def test_ctrl_c_during_a_sweep_keeps_the_finished_points(server_url, tmp_path):
    summary = tmp_path / "s.json"
    code, out = interrupted(["attach", server_url, "--headless", "--telemetry", "off", "--sweep",
                             "concurrency=1,2,4,8,16,32", "--runs", "1", "--max-new-tokens", "30",
                             "--summary", str(summary)], after="point    concurrency=1 ", cwd=tmp_path)
    assert code == 130, out
    data = json.loads(summary.read_text())
    assert data["interrupted"] is True and 1 <= len(data["points"]) < 6
    assert data["points"][0]["concurrency"] == 1 and data["runs"]


@pytest.mark.slow
def test_ctrl_c_during_a_plan_keeps_the_finished_trials_in_the_ledger(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text((DATA / "tiny.toml").read_text().split("[[trial]]")[0]
                    + '[[trial]]\nname = "long"\nbench = { runs = 200 }\n')
    ledger = tmp_path / "ledger.json"
    code, out = interrupted(["trials", str(plan), "--sim", "--sim-speed", "50", "--headless", "--telemetry", "off",
                             "--ledger", str(ledger)], after="result   only ok", cwd=tmp_path)
    assert code == 130, out
    rows = json.loads(ledger.read_text())
    assert [(r["name"], r["status"]) for r in rows][:1] == [("only", "ok")] and len(rows[0]["runs_decode_tok_s"]) == 2


def test_ctrl_c_during_launch_find_max_load_prints_the_answer_so_far(tmp_path):
    port = free_port()
    code, out = interrupted(["launch", "--headless", "--telemetry", "off", "--find-max-load", "--slo", "ttft_ms=5000",
                             "--runs", "1", "--max-new-tokens", "30", "--log", str(tmp_path / "server.log"), "--",
                             sys.executable, "-m", "tuiapp.sim.testserver", "--port", str(port), "--step-ms", "2"],
                            after="probe 1 streams: passed", cwd=tmp_path)
    assert code == 130, out
    # the Ctrl-C lands after the first probe passed, or a later one when the box is quick:
    # the answer so far is the largest probe that passed
    passed = [int(n) for n in re.findall(r"probe (\d+) streams: passed", out)]
    assert passed and min(passed) == 1, out
    assert f"max load meeting the SLO: at least {max(passed)} streams" in out, out
    assert "(interrupted: the answer so far)" in out
