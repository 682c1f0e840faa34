"""`tuiapp attach URL --log FILE` / `--log-cmd CMD` against the simulator, as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tuiapp.server.ports import free_port

ROOT = Path(__file__).resolve().parents[1]


def start_sim(log: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    out = open(log, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "20", "--port", str(port),
         "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", *flags],
        stdout=out, stderr=subprocess.STDOUT,
    )
    out.close()
    deadline = time.monotonic() + 30
    while b"ready to roll" not in log.read_bytes():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}"


def first_seen(path: Path, needle: bytes, stop: threading.Event, out: dict) -> None:
    """When ``needle`` was first seen in the file ("t"), and when a read that began last did not find it
    ("missed_at": the line was written after that). On a busy box this thread may not run for a while:
    then only "missed_at" bounds the write."""
    while not stop.is_set():
        began = time.monotonic()
        if needle in path.read_bytes():
            out["t"] = time.monotonic()
            return
        out["missed_at"] = began
        time.sleep(0.005)


@pytest.mark.parametrize("how", ["--log", "--log-cmd"])
@pytest.mark.slow
def test_attach_flags_a_fault_the_simulator_writes_to_its_log(tmp_path: Path, how: str) -> None:
    log = tmp_path / "sim.log"
    # the fault fires at the first decode step: attach's own warm-up request
    sim, url = start_sim(log, "--sim-fault", "assertion")
    source = str(log) if how == "--log" else f"tail -n0 -F {log}"
    stop, written = threading.Event(), {}
    watcher = threading.Thread(target=first_seen, args=(log, b"AssertionError", stop, written))
    watcher.start()
    deadline = time.monotonic() + 30
    while "missed_at" not in written and "t" not in written and time.monotonic() < deadline:
        time.sleep(0.01)  # it has read the log once before the fault can fire
    attach = subprocess.Popen(
        [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off",
         "--max-new-tokens", "8", how, source],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    alert_t = None
    try:
        deadline = time.monotonic() + 60
        assert attach.stdout is not None
        for line in attach.stdout:
            lines.append(line)
            if " ALERT " in line and "assertion" in line:
                alert_t = time.monotonic()
                break
            assert time.monotonic() < deadline
    finally:
        stop.set()
        watcher.join()
        attach.send_signal(signal.SIGINT)
        try:
            attach.wait(15)
        finally:
            attach.kill()
            sim.kill()
            sim.wait()
    assert alert_t is not None, "".join(lines) + (attach.stderr.read() if attach.stderr else "")
    # the fault was written after the last read that missed it: the delay is at most alert_t minus that
    # (the poller may not run for a while on a busy box, so a read that found it may come late or never)
    assert "missed_at" in written, "the fault was in the log before attach started"
    assert alert_t - written["missed_at"] < 2.0
    assert "ranks=3" in lines[-1]  # the simulator's victim rank


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["log", "log-cmd"])
def test_alert_delay_p99_through_log_sources(mode: str) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "alert_latency.py"), "--mode", mode, "--rate", "2000",
         "--seconds", "4", "--incidents-per-s", "4", "--json"],
        capture_output=True, text=True, timeout=90,
    )
    assert r.returncode == 0, r.stderr
    figures = json.loads(r.stdout)
    assert figures["incidents"] >= 5 and figures["missing_rank_alerts"] == 0
    assert figures["first_alert_ms"]["p99"] <= 100, figures
    assert figures["all_ranks_ms"]["p99"] <= 100, figures


@pytest.mark.parametrize("args, words", [
    (["--log-from-start"], "--log-from-start needs --log FILE"),
    (["--log", "a=/x", "--log-cmd", "a=tail -F /y"], "two log sources are labelled 'a'"),
    (["--log", "/"], "is a directory"),
    (["--log-cmd", " "], "empty value"),
])
def test_bad_log_options_are_one_line_usage_errors(args, words):
    r = subprocess.run([sys.executable, "-m", "tuiapp", "attach", "http://127.0.0.1:1", "--headless", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert r.stderr.strip().count("\n") == 0
