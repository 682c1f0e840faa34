"""Issue 8's acceptance: a headless recording of a plan, killed with kill -9 half-way,
replays up to the kill with every alert printed more than a second before it."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuiapp.events import Alert
from tuiapp.record.reading import read_recording

PLAN = Path(__file__).parent / "data" / "trials" / "sim_short.toml"


@pytest.mark.slow
def test_kill_9_half_way_keeps_every_alert(tmp_path):
    rec = tmp_path / "run.jsonl"
    cmd = [sys.executable, "-m", "tuiapp", "trials", str(PLAN), "--sim", "--sim-speed", "50",
           "--headless", "--telemetry", "sim", "--record", str(rec)]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed: list[tuple[float, str]] = []  # (when, alert kind) as the job printed them
    try:
        deadline = time.monotonic() + 90
        for line in job.stdout:
            if m := re.search(r"ALERT\s+(\w+) \w+ new", line):
                printed.append((time.monotonic(), m.group(1)))
            if len({k for _, k in printed}) >= 2:  # half-way: two failed trials behind us
                break
            assert time.monotonic() < deadline, "no alerts within 90 s"
        time.sleep(1.2)  # the recorder flushes at least every second
        os.kill(job.pid, signal.SIGKILL)
        job.wait(10)
    finally:
        if job.poll() is None:
            job.kill()
    recording = read_recording(rec)
    recorded = {e.alert_kind for e in recording.events if isinstance(e, Alert)}
    assert {kind for _, kind in printed} <= recorded
    assert recording.skipped_lines <= 1  # at most the line the kill cut short
    out = subprocess.run([sys.executable, "-m", "tuiapp", "replay", str(rec), "--headless"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert len(re.findall(r"ALERT\s+\w+ \w+ new", out.stdout)) >= len(printed)
