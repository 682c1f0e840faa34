"""Secrets by value: an API key, however it was spelled or wherever it was found, is in no file
tuiapp writes (plain and gz recordings, server log, report, summary, ledger) and not on stdout."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from tuiapp.server.ports import free_port
from tuiapp.sim.process import SimProcess

KEY = "sk-test-7f3a9c21"
ADMIN_KEY = "adm-test-55e1b0"


def _tuiapp(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", *args], capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)


def _assert_nowhere(root: Path, *secrets: str) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        for secret in secrets:
            assert secret.encode() not in data, f"{secret} in {path}"
    return files


@pytest.mark.slow
def test_launch_with_abbreviated_key_sends_it_and_writes_it_nowhere(tmp_path):
    sim = [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "100", "--port", str(free_port()),
           "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--api-ke", KEY, f"--admin-api-k={ADMIN_KEY}"]
    out = _tuiapp("launch", "--headless", "--runs", "1", "--max-new-tokens", "16", "--telemetry", "off",
                  "--record", str(tmp_path / "run.jsonl.gz"), "--", *sim)
    # exit 0: the benchmark ran, so the abbreviated key was sent (a missing key is HTTP 401)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert KEY not in out.stdout + out.stderr and ADMIN_KEY not in out.stdout + out.stderr
    report = _tuiapp("report", str(tmp_path / "run.jsonl.gz"), "-o", str(tmp_path / "report.md"))
    assert report.returncode == 0, report.stderr
    files = _assert_nowhere(tmp_path, KEY, ADMIN_KEY)
    assert {"run.jsonl.gz", "run.server.log", "report.md"} <= {p.name for p in files}
    log = (tmp_path / "run.server.log").read_text()
    assert "api_key='***'" in log or "'api_key': '***'" in log  # the server echoed it, masked


@pytest.mark.slow
def test_attach_with_abbreviated_key_and_a_key_only_the_server_knows(tmp_path):
    sim = SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--api-key", KEY,
                      "--admin-api-key", ADMIN_KEY])
    try:
        sim.wait_ready()
        out = _tuiapp("attach", sim.url, "--api-ke", KEY, "--headless", "--runs", "1", "--max-new-tokens", "16",
                      "--telemetry", "off", "--record", str(tmp_path / "a.jsonl"), "--summary",
                      str(tmp_path / "s.json"))
    finally:
        sim.proc.terminate()
        sim.proc.wait(10)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert KEY not in out.stdout + out.stderr and ADMIN_KEY not in out.stdout + out.stderr
    recording = (tmp_path / "a.jsonl").read_text()
    assert "launch_command" in recording  # /server_info's command line was recorded, masked
    _assert_nowhere(tmp_path, KEY, ADMIN_KEY)


def test_redact_tree_masks_values_at_every_depth():
    from tuiapp.common.redact import redact_tree

    info = {"api_key": KEY, "nested": [{"launch_command": f"sglang serve --api-k {KEY} --tp 8"}],
            "note": f"key was {ADMIN_KEY}", "admin_api_key": ADMIN_KEY}
    masked = redact_tree(info)
    assert KEY not in str(masked) and ADMIN_KEY not in str(masked)
    assert masked["nested"][0]["launch_command"] == "sglang serve --api-k *** --tp 8"


def test_abbreviations_judged_by_the_parser_that_reads_them():
    from tuiapp.common.redact import redact_argv

    # SGLang's parser: --api-ke and --admin-api are its secret flags
    assert redact_argv(["--api-ke", "abcd1234", "--admin-api=zzzz9999", "--tp", "8"]) == [
        "--api-ke", "***", "--admin-api=***", "--tp", "8"]
    # tuiapp's parser: --api is --api (generate|completions|chat), not --api-key
    assert redact_argv(["--api", "chat"], options=("--api", "--api-key")) == ["--api", "chat"]
    assert redact_argv(["--api-k", "abcd1234"], options=("--api", "--api-key")) == ["--api-k", "***"]


@pytest.mark.slow
def test_trials_plan_with_secret_flag_and_env_writes_them_nowhere(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[baseline]
name = "only"
model = "m"
flags = {{ tp = 8, api-ke = "{KEY}" }}
env = {{ HF_TOKEN = "{ADMIN_KEY}" }}
bench = {{ runs = 1, max_tokens = 8, warmup = 0 }}
timeouts = {{ ready_s = 60, run_s = 60 }}
""")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = _tuiapp("trials", str(plan), "--sim", "--headless", "--telemetry", "off",
                  "--record", str(out_dir / "t.jsonl"), "--ledger", str(out_dir / "l.json"),
                  "--ledger-md", str(out_dir / "l.md"), "--ledger-csv", str(out_dir / "l.csv"),
                  "--log-dir", str(out_dir / "logs"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert KEY not in out.stdout + out.stderr and ADMIN_KEY not in out.stdout + out.stderr
    files = _assert_nowhere(out_dir, KEY, ADMIN_KEY)
    assert {"t.jsonl", "l.json", "l.md", "l.csv", "only.log"} <= {p.name for p in files}
