import os
import signal
import subprocess
import sys
from pathlib import Path

from tuiapp.events import RunDone
from tuiapp.record.recorder import Recorder


def _readline(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline()  # blocks; pytest-timeout ends a hang


def test_headless_follow_prints_lines_as_the_job_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = Recorder(path, flush_interval_s=0.05)
    writer.open()
    writer.write(RunDone(run_index=0, requests=5, duration_s=1, decode_tok_s=89.1, output_tok_s=88.0))
    writer.flush()
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp", "replay", str(path), "--headless", "--follow"],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert "decode=89.1 tok/s" in _readline(proc)
        writer.write(RunDone(run_index=1, requests=5, duration_s=1, decode_tok_s=90.3, output_tok_s=88.0))
        assert "decode=90.3 tok/s" in _readline(proc)  # appended after replay started
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        writer.close()
    assert proc.returncode == 0
    assert out.startswith("summary: ") and "(all runs): mean 89.70" in out
