"""The Prometheus endpoint (--metrics-port): each event lands in the right series, scraped over
HTTP as Prometheus would; a port in use is one line and exit 2; a recording served by replay
has the recording's own figures."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tuiapp.events import (
    Alert,
    BenchSummary,
    GpuSample,
    PointDone,
    RequestDone,
    RunDone,
    TrialResult,
    TrialState,
)
from tuiapp.record.metrics_endpoint import MetricsEndpoint, error_reason
from tuiapp.record.reading import read_recording
from tuiapp.server.ports import free_port

CAMPAIGN = Path(__file__).parent.parent / "recordings" / "campaign.jsonl.gz"


def samples(url: str, **headers) -> dict[tuple[str, tuple], float]:
    text = httpx.get(url, headers=headers, timeout=10).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def value(got, name, **labels) -> float | None:
    return got.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def endpoint():
    ep = MetricsEndpoint("127.0.0.1", 0)
    yield ep
    ep.close()


def test_events_land_in_their_series(endpoint):
    ep = endpoint
    ep.apply(TrialState(name="base", index=1, total=2, phase="launching"))
    ep.apply(TrialState(name="base", index=1, total=2, phase="running"))
    for ttft, itl in ((0.05, 0.011), (0.07, 0.012)):
        ep.apply(RequestDone(run_index=0, request_index=0, completion_tokens=128, ttft_s=ttft, tpot_s=itl,
                             e2e_s=ttft + 127 * itl, chunk_gap_mean_s=itl))
    ep.apply(RequestDone(run_index=0, request_index=2, ok=False, error="HTTP 500: Internal Server Error"))
    ep.apply(RequestDone(run_index=0, request_index=3, ok=False, cancelled=True))
    ep.apply(RunDone(run_index=0, requests=3, errors=1, duration_s=3.0, decode_tok_s=86.5, output_tok_s=85.0,
                     accept_length=2.9, concurrency=4, trial="base"))
    ep.apply(BenchSummary(runs=1, mean_decode_tok_s=86.5, sd_decode_tok_s=None, ci95_decode_tok_s=(80.0, 93.0),
                          trial="base"))
    ep.apply(Alert(alert_kind="oom", message="torch.OutOfMemoryError: CUDA out of memory", ranks=[3], alert_id=7))
    ep.apply(Alert(alert_kind="oom", message="torch.OutOfMemoryError: CUDA out of memory", ranks=[3, 5], alert_id=7))
    ep.apply(GpuSample(index=0, uuid="GPU-1", mem_used_bytes=10 << 30, mem_total_bytes=141 << 30,
                       pcie_tx_bytes_s=1.5e9, util_pct=50.0))
    ep.apply(PointDone(point_index=0, concurrency=16, runs=2, requests=32, duration_s=8.0, output_tok_s=1200.0,
                       request_throughput_req_s=4.0, ttft_p99_ms=850.0, goodput_req_s=3.5, goodput_share=0.875,
                       trial="base"))
    ep.apply(TrialState(name="base", index=1, total=2, phase="failed"))
    ep.apply(TrialResult(name="base", status="oom"))
    got = samples(ep.url)
    base = {"trial": "base"}
    assert value(got, "tuiapp_requests_total", outcome="ok", **base) == 2
    assert value(got, "tuiapp_requests_total", outcome="error", **base) == 1
    assert value(got, "tuiapp_requests_total", outcome="cancelled", **base) == 1
    assert value(got, "tuiapp_request_errors_total", reason="HTTP N", **base) == 1
    assert value(got, "tuiapp_output_tokens_total", **base) == 256
    assert value(got, "tuiapp_ttft_seconds_count", **base) == 2
    assert value(got, "tuiapp_ttft_seconds_sum", **base) == pytest.approx(0.12)
    assert value(got, "tuiapp_ttft_seconds_bucket", le="0.05", **base) == 1
    assert value(got, "tuiapp_tpot_seconds_sum", **base) == pytest.approx(0.023)
    assert value(got, "tuiapp_decode_tokens_per_second", **base) == 86.5
    assert value(got, "tuiapp_output_tokens_per_second", **base) == 85.0
    assert value(got, "tuiapp_spec_accept_length", **base) == 2.9
    assert value(got, "tuiapp_bench_concurrency", **base) == 4
    assert value(got, "tuiapp_decode_tokens_per_second_ci95", bound="high", **base) == 93.0
    # one incident, counted once; its ranks counted as they joined; its info series follows them
    assert value(got, "tuiapp_incidents_total", kind="oom", severity="error") == 1
    assert value(got, "tuiapp_incident_ranks_total", kind="oom", rank="3") == 1
    assert value(got, "tuiapp_incident_ranks_total", kind="oom", rank="5") == 1
    info = [k for k in got if k[0] == "tuiapp_incident_info"]
    assert len(info) == 1 and ("ranks", "3,5") in info[0][1]
    # the trial's phase: one series, the last one
    phases = [dict(k[1])["phase"] for k in got if k[0] == "tuiapp_trial_phase_info"]
    assert phases == ["failed"] and value(got, "tuiapp_trial_live", trial="base") == 0
    assert value(got, "tuiapp_trial_results_total", status="oom") == 1
    assert value(got, "tuiapp_trials_planned") == 2
    gpu = {"gpu": "0", "uuid": "GPU-1", "node": ""}
    assert value(got, "tuiapp_gpu_memory_used_bytes", **gpu) == 10 << 30
    assert value(got, "tuiapp_gpu_pcie_tx_bytes_per_second", **gpu) == 1.5e9
    assert value(got, "tuiapp_gpu_utilization_ratio", **gpu) == 0.5
    point = {"trial": "base", "load": "concurrency=16"}
    assert value(got, "tuiapp_point_output_tokens_per_second", **point) == 1200.0
    assert value(got, "tuiapp_point_latency_seconds", latency="ttft", quantile="0.99", **point) == 0.85
    assert value(got, "tuiapp_point_goodput_ratio", **point) == 0.875
    assert not any(name.endswith("_created") for name, _ in got)


def test_openmetrics_is_served_when_asked_for(endpoint):
    endpoint.apply(RunDone(run_index=0, requests=1, duration_s=1.0, decode_tok_s=10.0, output_tok_s=10.0))
    response = httpx.get(endpoint.url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


def test_error_reasons_keep_the_label_set_small():
    assert error_reason("HTTP 500: boom") == "HTTP N"
    assert error_reason("no answer within 10 s") == "no answer within N s"
    assert error_reason(None) == "unknown"
    assert error_reason("ReadTimeout(timed out)") == "ReadTimeout"


def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "tuiapp", "replay", str(CAMPAIGN), "--headless", "--summary",
                              "--metrics-port", str(port)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"tuiapp replay: error: --metrics-port {port}: cannot serve on 127.0.0.1:{port}: Address already in use"], out.stderr


def test_replay_serves_the_recordings_figures():
    events = read_recording(CAMPAIGN).events
    runs = [e for e in events if e.kind == "run"]
    last = {e.trial: e.decode_tok_s for e in runs}
    ok_requests = sum(1 for e in events if e.kind == "request" and e.ok and not e.cancelled)
    incidents = {e.alert_id: e.alert_kind for e in events if e.kind == "alert"}
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp", "replay", str(CAMPAIGN), "--headless", "--summary",
                             "--metrics-port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ""
        while "serving the recording's figures" not in line:
            line = proc.stdout.readline()
            assert line, "replay ended before serving"
        got = samples(f"http://127.0.0.1:{port}/metrics")
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
    assert code == 0
    for trial, decode in last.items():
        assert value(got, "tuiapp_decode_tokens_per_second", trial=trial) == pytest.approx(decode)
    served = sum(v for (name, labels), v in got.items() if name == "tuiapp_requests_total" and ("outcome", "ok") in labels)
    assert served == ok_requests
    for kind in set(incidents.values()):
        want = sum(1 for k in incidents.values() if k == kind)
        assert sum(v for (name, labels), v in got.items()
                   if name == "tuiapp_incidents_total" and ("kind", kind) in labels) == want
