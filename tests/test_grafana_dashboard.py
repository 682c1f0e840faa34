"""grafana/tuiapp-dashboard.json queries only series that exist: tuiapp's as its endpoint serves
them, SGLang's as a real 0.5.23 server's /metrics has them, DCGM's as dcgm-exporter prints them."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tuiapp.events import (
    Alert,
    BenchSummary,
    GpuSample,
    PointDone,
    RequestDone,
    RunDone,
    ServerState,
    TrialResult,
    TrialState,
)
from tuiapp.record.metrics_endpoint import MetricsEndpoint

ROOT = Path(__file__).parent.parent
DASHBOARD = ROOT / "grafana" / "tuiapp-dashboard.json"
DATA = Path(__file__).parent / "data"
NAME = re.compile(r"(?:tuiapp_|sglang:|DCGM_FI_)[A-Za-z0-9_:]+")


def exprs(board: dict) -> list[str]:
    found = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    found += [a["expr"] for a in board["annotations"]["list"]]
    found += [v["query"]["query"] for v in board["templating"]["list"] if isinstance(v.get("query"), dict)]
    return found


def names_in(text: str) -> set[str]:
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


def tuiapp_names() -> set[str]:
    return names_in(tuiapp_exposition())


def tuiapp_exposition() -> str:
    ep = MetricsEndpoint("127.0.0.1", 0)
    try:
        for event in (TrialState(name="t", index=1, total=1, phase="running"), ServerState(state="ready"),
                      RequestDone(run_index=0, request_index=0, completion_tokens=8, ttft_s=0.1, tpot_s=0.01,
                                  e2e_s=0.2, chunk_gap_mean_s=0.01),
                      RequestDone(run_index=0, request_index=1, ok=False, error="HTTP 500"),
                      RunDone(run_index=0, requests=2, duration_s=1, decode_tok_s=1, output_tok_s=1, accept_length=2),
                      BenchSummary(runs=1, mean_decode_tok_s=1, sd_decode_tok_s=0, ci95_decode_tok_s=(1, 1)),
                      Alert(alert_kind="oom", message="x", ranks=[0], alert_id=1),
                      GpuSample(index=0, mem_used_bytes=1, mem_total_bytes=2, pcie_tx_bytes_s=1, pcie_rx_bytes_s=1,
                                util_pct=1, power_w=1, temp_c=1),
                      PointDone(point_index=0, concurrency=4, runs=2, requests=8, duration_s=2, output_tok_s=10,
                                request_throughput_req_s=1, ttft_p99_ms=5, goodput_req_s=1, goodput_share=1, trial="t"),
                      TrialResult(name="t", status="ok")):
            ep.apply(event)
        return httpx.get(ep.url, timeout=10).text
    finally:
        ep.close()


def test_the_file_is_the_builders_output():
    spec = importlib.util.spec_from_file_location("build_dashboard", ROOT / "grafana" / "build_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert DASHBOARD.read_text() == module.render()


def test_every_queried_series_exists():
    board = json.loads(DASHBOARD.read_text())
    known = (tuiapp_names() | names_in((DATA / "bench" / "metrics_sglang_0.5.23_cpu.txt").read_text())
             | names_in((DATA / "telemetry" / "dcgm_node_a.prom").read_text()))
    queried: set[str] = set()
    for expr in exprs(board):
        found = set(NAME.findall(expr))
        assert found, f"no series in {expr!r}"
        queried |= found
    assert sorted(queried - known) == []
    # the three sources all appear, and the panels the issue asks for are there
    assert any(n.startswith("sglang:") for n in queried) and any(n.startswith("DCGM_FI_") for n in queried)
    titles = {p["title"] for p in board["panels"]}
    assert {"Trial timeline", "Incidents (kind, ranks, message)", "PCIe throughput", "GPU memory used"} <= titles
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])


def kinds_in(text: str) -> dict[str, str]:
    """Sample name -> its family's type (counter, gauge, histogram...), as the exposition says."""
    return {s.name: fam.type for fam in text_string_to_metric_families(text) for s in fam.samples}


RATE_OF = re.compile(r"\b(rate|irate|increase)\(\s*([A-Za-z_:][A-Za-z0-9_:]*)")


def test_rate_is_taken_only_of_counters_never_of_a_gauge():
    """rate() of a gauge (dcgm-exporter's PCIe fields are bytes/s already) draws its slope, not its value."""
    board = json.loads(DASHBOARD.read_text())
    kinds = (kinds_in(tuiapp_exposition()) | kinds_in((DATA / "bench" / "metrics_sglang_0.5.23_cpu.txt").read_text())
             | kinds_in((DATA / "telemetry" / "dcgm_node_a.prom").read_text()))
    assert kinds["DCGM_FI_PROF_PCIE_RX_BYTES"] == kinds["DCGM_FI_PROF_PCIE_TX_BYTES"] == "gauge"
    rated = [(fn, name) for expr in exprs(board) for fn, name in RATE_OF.findall(expr)]
    assert rated, "the dashboard takes rates of tuiapp's counters"
    for fn, name in rated:
        assert kinds.get(name) in ("counter", "histogram", "summary"), f"{fn}({name}): {kinds.get(name)}"
    pcie = next(p for p in board["panels"] if p["title"] == "PCIe throughput")
    assert {"DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES"} <= {t["expr"] for t in pcie["targets"]}
