"""Real failures of the real server through tuiapp's own code paths (``tuiapp launch`` and
``tuiapp attach`` as subprocesses, headless): processes killed mid-run, SIGTERM, a start that
fails, a flag preflight refuses, a request the server refuses, a client that aborts. The logs
these produced on the CPU box are kept in tests/data/logs_real_cpu/ (test_logscan_real_cpu.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest
from real_sglang import RealServer, alive, kill_tree, server_argv, server_env, venv

from tuiapp.server.ports import free_port

pytestmark = [pytest.mark.real_sglang, pytest.mark.timeout(600)]  # a real start is 40-60 s, more on a loaded box

ALERT_WITHIN_S = 2.0


class Job:
    """A tuiapp command in its own session, its stdout lines timestamped as they arrive."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tuiapp.cli", *argv], cwd=cwd, env=server_env(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.lines: list[tuple[float, str]] = []
        self.err: list[bytes] = []
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)]
        for t in self._threads:
            t.start()
        self.seen_pids: set[int] = set()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.append((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\n")))

    @property
    def stdout(self) -> str:
        return "\n".join(line for _, line in self.lines)

    @property
    def stderr(self) -> str:
        return b"".join(self.err).decode("utf-8", "replace")

    def wait_line(self, pattern: str, timeout_s: float) -> tuple[float, str]:
        deadline = time.monotonic() + timeout_s
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if rx.search(line):
                    return t, line
            if self.proc.poll() is not None and not any(rx.search(line) for _, line in self.lines):
                time.sleep(0.2)
                if not any(rx.search(line) for _, line in self.lines):
                    break
            self.track()
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} in {timeout_s} s; stdout:\n{self.stdout[-3000:]}\n"
                             f"stderr:\n{self.stderr[-2000:]}")

    def server_procs(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def track(self) -> None:
        self.seen_pids.update(p.pid for p in self.server_procs())

    def named(self, title: str) -> psutil.Process:
        for p in self.server_procs():
            try:
                if p.cmdline() and p.cmdline()[0].startswith(title):
                    return p
            except psutil.Error:
                continue
        raise AssertionError(f"no {title} process under tuiapp")

    def wait(self, timeout_s: float) -> int:
        return self.proc.wait(timeout=timeout_s)

    def cleanup(self) -> None:
        self.track()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        kill_tree(alive(sorted(self.seen_pids)))
        for t in self._threads:
            t.join(timeout=2)


@pytest.fixture
def launch(tmp_path, request):
    jobs: list[Job] = []

    def start(*server_flags: str, runs: int = 200, tokens: int = 256, preflight: bool = False) -> Job:
        v = venv()
        argv = ["launch", "--headless", "--telemetry", "off", "--runs", str(runs), "--max-new-tokens", str(tokens),
                "--ready-timeout", "300", "--record", str(tmp_path / "run.jsonl"), "--log", str(tmp_path / "server.log")]
        if not preflight:
            argv.append("--no-preflight")
        job = Job([*argv, "--", *server_argv(v, free_port(), *server_flags)], tmp_path)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.cleanup()
    keep = os.environ.get("TUIAPP_REAL_KEEP_LOGS")  # how tests/data/logs_real_cpu/ was made
    if keep and (tmp_path / "server.log").exists():
        name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / f"{name}.log").write_bytes((tmp_path / "server.log").read_bytes())


def _no_process_left(job: Job) -> None:
    deadline = time.monotonic() + 10
    while alive(sorted(job.seen_pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(sorted(job.seen_pids)) == []


@pytest.mark.parametrize("title", ["sglang::scheduler", "sglang::detokenizer"])
def test_kill9_mid_run_is_a_crash_alert_and_the_run_stops(launch, tmp_path, title):
    job = launch()
    job.wait_line(r" run +#1 ", timeout_s=300)  # benchmarking: mid-run from here on
    job.track()
    victim = job.named(title)
    killed_at = time.monotonic()
    victim.kill()
    alert_t, alert = job.wait_line(r"ALERT +crash ", timeout_s=30)
    assert alert_t - killed_at < ALERT_WITHIN_S, (alert_t - killed_at, alert)
    assert f"pid={victim.pid}" in alert or "crashed with exit code -9" in alert or "SIGQUIT" in alert, alert
    code = job.wait(timeout_s=60)
    assert code == 1, job.stdout[-2000:]
    runs_before = len([line for _, line in job.lines if re.search(r" run +#", line)])
    assert runs_before < 200  # the loop stopped: it did not run to the end
    _no_process_left(job)


def test_sigterm_of_the_server_stops_the_job_cleanly(launch):
    job = launch()
    job.wait_line(r" run +#1 ", timeout_s=300)
    job.track()
    server = psutil.Process(job.proc.pid).children()[0]  # the server's main (HTTP) process
    server.send_signal(signal.SIGTERM)
    code = job.wait(timeout_s=90)
    out = job.stdout
    assert "ALERT" not in out  # a clean shutdown raises nothing
    assert re.search(r"server +(stopped|exited|failed)", out), out[-2000:]
    assert code in (0, 1)
    _no_process_left(job)


def test_failed_start_reports_the_warmup_assertion(launch):
    job = launch("--max-total-tokens", "8", runs=1)
    code = job.wait(timeout_s=300)
    out = job.stdout + job.stderr
    assert code == 1, out[-3000:]
    failed = [line for _, line in job.lines if re.search(r"server +failed", line)]
    assert failed and "AssertionError" in failed[0], out[-3000:]
    assert re.search(r"ALERT +assertion ", out), out[-3000:]
    _no_process_left(job)


def test_unknown_flag_is_caught_by_preflight_before_launch(launch):
    job = launch("--max-total-tokenz", "8", runs=1, preflight=True)
    code = job.wait(timeout_s=180)
    out = job.stdout
    assert code == 1, out  # the trial failed (at preflight); a usage error of tuiapp itself is 2
    assert re.search(r"launch failed --max-total-tokenz: unrecognized option: --max-total-tokenz \(--max-total-tokens\)", out), out
    assert re.search(r"result +launch preflight", out), out
    assert "server   " not in out and "Traceback" not in job.stderr  # never launched
    job.track()
    assert job.seen_pids == set()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    v = venv()
    real = RealServer(v, tmp_path_factory.mktemp("attach") / "server.log", free_port())
    try:
        real.wait_ready()
        yield real
    finally:
        real.stop()


def test_a_refused_request_shows_the_servers_reason(server, tmp_path):
    job = Job(["attach", server.url, "--headless", "--telemetry", "off", "--runs", "1", "--warmup", "0",
               "--input-tokens", "5000", "--max-new-tokens", "4", "--no-flush-cache"], tmp_path)
    try:
        code = job.wait(timeout_s=120)
        out = job.stdout + job.stderr
        assert re.search(r"is longer than the model's context length \(4096 tokens\)", out), out[-3000:]
        assert code == 1  # no request of any run succeeded
    finally:
        job.cleanup()
    assert httpx.get(server.url + "/health", timeout=5).status_code == 200


def test_client_abort_frees_the_request_on_the_server(server, tmp_path):
    job = Job(["attach", server.url, "--headless", "--telemetry", "off", "--runs", "3", "--warmup", "0",
               "--max-new-tokens", "4000", "--no-flush-cache"], tmp_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _running(server.url) < 1:
            time.sleep(0.2)
        assert _running(server.url) == 1
        aborted_at = time.monotonic()
        job.proc.send_signal(signal.SIGINT)  # the user stops tuiapp mid-request
        code = job.wait(timeout_s=30)
        assert time.monotonic() - aborted_at < 10 and code == 130, job.stdout[-2000:]  # Ctrl-C: exit 130
    finally:
        job.cleanup()
    deadline = time.monotonic() + 10
    while _running(server.url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _running(server.url) == 0  # the server aborted the stream's request
    assert httpx.get(server.url + "/health", timeout=5).status_code == 200
    assert "Traceback" not in server.log.split("fired up and ready to roll!")[-1]


def _running(url: str) -> int:
    text = httpx.get(url + "/metrics", timeout=5).text
    m = re.search(r"^sglang:num_running_reqs\{[^}]*\} ([\d.]+)$", text, re.M)
    return int(float(m.group(1))) if m else -1


def test_real_launchers_are_checked_in_every_recognised_form(tmp_path):
    """`sglang serve`, and the real launcher inside `bash -c` and a shell script, get the real
    --help; the wrapping shell and script are never run (issue 35)."""
    import shlex

    from tuiapp.server import preflight as preflight_module
    from tuiapp.server.preflight import preflight

    v = venv()
    marker = tmp_path / "ran"
    real = server_argv(v, free_port(), "--tp-sise", "1")
    forms = [
        [str(v / "bin" / "sglang"), "serve", *real[3:]],
        ["bash", "-c", f"touch {marker}; exec {shlex.join(real)}"],
    ]
    script = tmp_path / "serve.sh"
    script.write_text(f"#!/bin/bash\ntouch {marker}\n{shlex.join(real)} \"$@\"\n")
    script.chmod(0o755)
    forms.append([str(script)])
    for argv in forms:
        preflight_module._HELP_CACHE.clear()
        problems = preflight(argv, timeout_s=120)
        assert [(p.flag, p.suggestion) for p in problems] == [("--tp-sise", "--tp-size")], (argv, problems)
    assert not marker.exists()
