"""The issue's "done when" commands against the real SGLang CPU server: a concurrency sweep
with an SLO, and open loop at 4 req/s, each writing the summary's `points`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from real_sglang import RealServer, venv

from tuiapp.server.ports import free_port

pytestmark = [pytest.mark.real_sglang, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def real_url(tmp_path_factory):
    server = RealServer(venv(), tmp_path_factory.mktemp("load") / "real.log", free_port())
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()


def attach(url, *args):
    return subprocess.run([sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off",
                           "--max-new-tokens", "16", *args], capture_output=True, text=True, timeout=300)


def test_sweep_with_slo(real_url, tmp_path):
    f = tmp_path / "sweep.json"
    r = attach(real_url, "--sweep", "concurrency=1,4,16", "--runs", "2", "--slo", "ttft_ms=2000,tpot_ms=100",
               "--summary", str(f))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    points = json.loads(f.read_text())["points"]
    assert [p["concurrency"] for p in points] == [1, 4, 16]
    for p in points:
        assert p["errors"] == 0 and p["runs"] == 2
        assert p["output_tok_s"] > 0 and p["ttft_p50_ms"] > 0 and p["tpot_p50_ms"] > 0
        assert p["ttft_p50_ms"] <= p["ttft_p99_ms"]
        assert 0.0 <= p["goodput_share"] <= 1.0 and p["goodput_req_s"] is not None
    # batching: 16 streams deliver more tokens per second than one
    assert points[2]["output_tok_s"] > points[0]["output_tok_s"]


def test_open_loop_rate(real_url, tmp_path):
    f = tmp_path / "rate.json"
    r = attach(real_url, "--request-rate", "4", "--runs", "2", "--summary", str(f))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    data = json.loads(f.read_text())
    (point,) = data["points"]
    assert point["request_rate"] == 4.0 and point["requests"] == 64 and point["errors"] == 0
    # Poisson arrivals over 32 requests a run: the achieved rate is near, not at, the target
    assert 2.0 < data["sent_request_rate"] < 8.0
