"""Every failure names what happened, in one line; pipes and terminals that go away end quietly."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tuiapp.server.ports import free_port
from tuiapp.sim.process import SimProcess

DATA = Path(__file__).parent / "data"


def _tuiapp(*args: str, timeout_s: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiapp", *args], capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL, **kw)


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("args, says", [
    (["attach"], "tuiapp attach: error: attach needs the server's URL (or --slurm-job ID)"),
    (["attach", "http://x", "--concurrency", "many"], "tuiapp attach: error: argument --concurrency"),
    (["logscan"], "tuiapp logscan: error:"),
    (["nosuch"], "tuiapp: error: argument COMMAND: invalid choice"),
])
def test_argparse_errors_are_one_line_exit_2(args, says):
    out = _tuiapp(*args)
    assert out.returncode == 2
    assert _one_line(out.stderr).startswith(says), out.stderr


@pytest.mark.slow
def test_a_server_that_accepts_and_never_answers_is_named_so():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        t0 = time.monotonic()
        out = _tuiapp("attach", f"http://127.0.0.1:{port}", "--headless", "--connect-timeout", "0.5")
        took_s = time.monotonic() - t0
    finally:
        listener.close()
    assert out.returncode == 1
    line = _one_line(out.stderr)
    assert line.startswith("tuiapp attach: error: GET http://127.0.0.1:") and "no answer within 5.5 s" in line
    assert took_s < 20  # one wait, not one per endpoint


@pytest.mark.slow
def test_a_refused_key_gives_the_status_and_the_servers_own_message():
    sim = SimProcess(["--model-path", "m", "--tp", "8", "--api-key", "right-key-123"])
    try:
        sim.wait_ready()
        out = _tuiapp("attach", sim.url, "--api-key", "wrong-key-456", "--headless")
    finally:
        sim.proc.terminate()
        sim.proc.wait(10)
    assert out.returncode == 1
    line = _one_line(out.stderr)
    assert "HTTP 401 Unauthorized" in line and "wrong or missing --api-key" in line, line


def test_nothing_listening_is_named_so():
    # nothing listening may be a server still starting: waited for, --ready-timeout at most
    out = _tuiapp("attach", f"http://127.0.0.1:{free_port()}", "--headless", "--ready-timeout", "0.5")
    assert out.returncode == 1
    error = out.stderr.strip().splitlines()[-1]
    assert error.startswith("tuiapp attach: error: ") and error.endswith("Connection refused")


@pytest.mark.parametrize("args", [
    ["logscan", str(DATA / "logs_real" / "real_torch_oom_sglang.log")],
    ["trials", str(DATA / "trials" / "tiny.toml"), "--check"],
])
def test_a_closed_pipe_ends_quietly_with_141(args):
    """`tuiapp ... | head -1`: the reader went away; tuiapp ends as a process killed by SIGPIPE
    would be reported (128 + 13), without a traceback."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the reader has already gone: the first write fails
    proc = subprocess.run([sys.executable, "-m", "tuiapp", *args], stdout=write_fd, stderr=subprocess.PIPE,
                          text=True, timeout=60)
    os.close(write_fd)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


@pytest.mark.pty
@pytest.mark.slow
def test_headless_job_survives_its_terminal_and_exits_with_its_result(tmp_path):
    """The terminal of a headless job goes away (SIGHUP to it as session leader, then EIO on
    every print, the final summary included): it finishes its runs and exits 0, no traceback."""
    master, slave = os.openpty()
    sim = [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "100", "--port", str(free_port()),
           "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
    err = open(tmp_path / "stderr.txt", "wb")

    def child_setup() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "tuiapp", "launch", "--headless", "--runs", "3",
                             "--max-new-tokens", "16", "--telemetry", "off", "--record", str(tmp_path / "r.jsonl"),
                             "--", *sim], stdin=slave, stdout=slave, stderr=err, preexec_fn=child_setup)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b" run " not in seen and time.monotonic() < deadline:
        seen += os.read(master, 65536)
    os.close(master)  # the SSH connection drops
    try:
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            proc.kill()
        err.close()
    assert b" run " in seen
    assert code == 0, (tmp_path / "stderr.txt").read_text()[-3000:]
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
    assert (tmp_path / "r.jsonl").read_text().count('"kind":"run",') == 3


@pytest.mark.parametrize("command", ["replay", "report"])
def test_a_directory_is_not_a_recording(command, tmp_path):
    out = _tuiapp(command, str(tmp_path))
    assert out.returncode == 2
    assert _one_line(out.stderr) == f"tuiapp {command}: error: {tmp_path}: is a directory, not a recording (.jsonl or .jsonl.gz)"


def test_demo_speed_names_the_option_the_user_typed():
    out = _tuiapp("demo", "--speed", "0", "--headless")
    assert out.returncode == 2
    assert _one_line(out.stderr) == "tuiapp demo: error: --speed must be > 0"


def test_report_into_a_missing_directory_is_an_error_and_creates_nothing(tmp_path):
    recording = Path(__file__).parent.parent / "recordings" / "campaign.jsonl.gz"
    target = tmp_path / "no" / "such" / "r.md"
    out = _tuiapp("report", str(recording), "-o", str(target))
    assert out.returncode == 2
    assert "no directory" in _one_line(out.stderr)
    assert not (tmp_path / "no").exists()


def test_preflight_says_why_a_help_failed(tmp_path, monkeypatch):
    from stand_ins import fake_sglang

    from tuiapp.server import preflight as preflight_module
    from tuiapp.server.preflight import preflight

    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})
    argv = [sys.executable, "-m", "sglang.launch_server", "--tp", "8"]
    starts = fake_sglang(tmp_path / "starts", output="loading model\nlistening on :8000\n", code=0)
    monkeypatch.setenv("PYTHONPATH", str(starts))
    (problem,) = preflight(argv)
    assert "printed no option list" in problem.message and "listening" not in problem.message
    dies = fake_sglang(tmp_path / "dies", output="Traceback (most recent call last):\nModuleNotFoundError: No module"
                                                 " named 'sglang.srt'\n  (some trailing noise)\n")
    monkeypatch.setenv("PYTHONPATH", str(dies))
    (problem,) = preflight(argv)
    assert problem.message.endswith("failed (exit 1): ModuleNotFoundError: No module named 'sglang.srt'")
    assert "is SGLang installed" in problem.suggestion


def test_a_missing_executable_is_not_a_crash(tmp_path):
    out = _tuiapp("launch", "--headless", "--no-preflight", "--runs", "1", "--telemetry", "off",
                  "--log", str(tmp_path / "s.log"), "--", str(tmp_path / "no-such-server"), "--tp", "8")
    assert out.returncode == 1
    assert "server command not found" in out.stdout + out.stderr
    assert "crash" not in out.stdout
    assert "launch preflight" in out.stdout, out.stdout
