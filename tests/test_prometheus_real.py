"""A real Prometheus server scrapes `tuiapp attach --metrics-port` of the simulator (issue 34).

The tier: `TUIAPP_PROMETHEUS=/usr/bin/prometheus pytest -m prometheus` (tools/prometheus/setup.sh
installs Debian's package and prints the path). Off without the variable; with it, a server that
cannot start is a failure. Prometheus scrapes every second; the values it stored, read back
through its HTTP query API, must be the recording's own figures.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tuiapp.record.reading import read_recording
from tuiapp.server.ports import free_port
from tuiapp.sim.process import SimProcess

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(300)]
ENV = "TUIAPP_PROMETHEUS"


def prometheus_binary() -> str:
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(f"real Prometheus tier off: set {ENV}=PATH (tools/prometheus/setup.sh prints it)")
    if not Path(value).is_file():
        pytest.fail(f"{ENV}={value}: no such binary; run tools/prometheus/setup.sh")
    return value


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus with ``targets``; yields (query, stop)."""
    procs: list[subprocess.Popen] = []

    def start(targets: list[str]) -> str:
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: tuiapp\n    static_configs:\n"
            f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([prometheus_binary(), f"--config.file={config}",
                                 f"--storage.tsdb.path={tmp_path / 'data'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log,
                                start_new_session=True)
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/-/ready", timeout=2).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"Prometheus did not start: {(tmp_path / 'prometheus.log').read_text()[-2000:]}")

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def query(base: str, promql: str, at: float | None = None) -> list[dict]:
    params = {"query": promql}
    if at is not None:
        params["time"] = f"{at:.3f}"
    body = httpx.get(f"{base}/api/v1/query", params=params, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def test_prometheus_scrapes_the_live_session(tmp_path, prometheus):
    metrics_port = free_port()
    base = prometheus([f"127.0.0.1:{metrics_port}"])
    sim = SimProcess(["--model-path", "m", "--tp", "8"], speed=100)
    record = tmp_path / "run.jsonl"
    job = None
    try:
        sim.wait_ready()
        job = subprocess.Popen(
            [sys.executable, "-m", "tuiapp", "attach", sim.url, "--headless", "--telemetry", "sim",
             "--requests-per-run", "2", "--max-new-tokens", "32", "--record", str(record),
             "--metrics-port", str(metrics_port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        # until Prometheus has stored three finished runs of the live session
        deadline = time.monotonic() + 120
        runs = []
        while time.monotonic() < deadline:
            runs = query(base, 'tuiapp_runs_total{trial=""}')
            if runs and float(runs[0]["value"][1]) >= 3:
                break
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.5)
        assert runs and float(runs[0]["value"][1]) >= 3, runs
        at = time.time()
        job.send_signal(signal.SIGINT)
        assert job.wait(timeout=60) == 130  # Ctrl-C: what was measured is kept, the exit says it was cut short
    finally:
        if job is not None and job.poll() is None:
            job.kill()
            job.wait()
        sim.proc.terminate()
        sim.proc.wait(10)
    events = read_recording(record).events
    decode_by_run = [e.decode_tok_s for e in events if e.kind == "run"]
    # every decode tok/s Prometheus stored is one of the runs' own figures
    stored = query(base, 'tuiapp_decode_tokens_per_second{trial=""}[10m]', at)
    values = [float(v) for _, v in stored[0]["values"]]
    assert values and all(any(v == pytest.approx(d, rel=1e-9) for d in decode_by_run) for v in values), (
        values, decode_by_run)
    # the counters it stored never exceed, and end within a run of, what the recording holds
    ok_requests = sum(1 for e in events if e.kind == "request" and e.ok and not e.cancelled)
    (stored_ok,) = query(base, 'max_over_time(tuiapp_requests_total{outcome="ok",trial=""}[10m])', at)
    assert ok_requests - 2 <= float(stored_ok["value"][1]) <= ok_requests
    (ttft_count,) = query(base, 'max_over_time(tuiapp_ttft_seconds_count{trial=""}[10m])', at)
    assert float(ttft_count["value"][1]) == float(stored_ok["value"][1])
    tokens = sum(e.completion_tokens or 0 for e in events if e.kind == "request" and e.ok and not e.cancelled)
    (stored_tokens,) = query(base, 'max_over_time(tuiapp_output_tokens_total{trial=""}[10m])', at)
    assert tokens - 64 <= float(stored_tokens["value"][1]) <= tokens
    # the simulated GPUs: one series each, the card's size as sampled
    totals = {e.index: e.mem_total_bytes for e in events if e.kind == "gpu"}
    stored_gpus = query(base, "tuiapp_gpu_memory_total_bytes", at)
    assert {int(s["metric"]["gpu"]): float(s["value"][1]) for s in stored_gpus} == {
        i: float(b) for i, b in totals.items()}
    # and Prometheus saw the target up, with tuiapp's own histogram quantiles computable
    (up,) = query(base, "up", at)
    assert up["value"][1] == "1"
    (p50,) = query(base, 'histogram_quantile(0.5, sum by (le) (tuiapp_ttft_seconds_bucket))', at)
    assert 0 < float(p50["value"][1]) < 10
