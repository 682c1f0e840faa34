"""Writes grafana/tuiapp-dashboard.json: tuiapp's live session beside SGLang's own /metrics and
dcgm-exporter, in one Grafana dashboard (schema 39, Grafana 10/11). Run it after changing a
panel: `python grafana/build_dashboard.py`. tests/test_grafana_dashboard.py checks that every
series a panel queries exists (tuiapp's from the live endpoint, SGLang's from a real 0.5.23
server's /metrics, DCGM's from dcgm-exporter's output) and that the file is this script's output.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("tuiapp-dashboard.json")
DS = {"type": "prometheus", "uid": "${datasource}"}


def target(expr: str, legend: str, ref: str, instant: bool = False, fmt: str | None = None) -> dict:
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}
    if instant:
        t["instant"], t["range"] = True, False
    if fmt:
        t["format"] = fmt
    return t


def panel(pid: int, title: str, kind: str, grid: tuple[int, int, int, int], targets: list[dict], unit: str = "short",
          description: str = "", **extra) -> dict:
    x, y, w, h = grid
    p = {"id": pid, "title": title, "type": kind, "datasource": DS, "description": description,
         "gridPos": {"x": x, "y": y, "w": w, "h": h}, "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}
    p.update(extra)
    return p


def row(pid: int, title: str, y: int) -> dict:
    return {"id": pid, "type": "row", "title": title, "collapsed": False,
            "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []}


# a table of one series' labels: the sample's own columns say nothing
HIDE_META_COLUMNS = [{"id": "organize", "options": {"excludeByName": {
    "Time": True, "Value": True, "__name__": True, "job": True, "instance": True}}}]


def build() -> dict:
    q = '{trial=~"$trial"}'
    panels = [
        row(1, "Trial in progress", 0),
        panel(2, "Trial timeline", "state-timeline", (0, 1, 16, 6),
              [target("tuiapp_trial_live", "{{trial}}", "A")],
              description="1 while tuiapp launches or measures the trial (tuiapp_trial_live)",
              options={"mergeValues": True, "showValue": "never", "rowHeight": 0.8},
              fieldConfig={"defaults": {"unit": "short", "mappings": [
                  {"type": "value", "options": {"0": {"text": "idle", "color": "transparent"},
                                                "1": {"text": "live", "color": "green"}}}]},
                  "overrides": []}),
        panel(3, "Trial phase", "table", (16, 1, 8, 6),
              [target("tuiapp_trial_phase_info == 1", "", "A", instant=True, fmt="table")],
              description="The phase each trial is in or ended in (tuiapp_trial_phase_info)",
              transformations=HIDE_META_COLUMNS),
        row(4, "Throughput and latency (client side, tuiapp)", 7),
        panel(5, "Decode tok/s per run", "timeseries", (0, 8, 8, 8),
              [target(f"tuiapp_decode_tokens_per_second{q}", "{{trial}}", "A"),
               target(f"tuiapp_decode_tokens_per_second_mean{q}", "{{trial}} mean", "B")], unit="short",
              description="Mean single-stream decode rate of each run's requests"),
        panel(6, "Output tok/s", "timeseries", (8, 8, 8, 8),
              [target(f"tuiapp_output_tokens_per_second{q}", "{{trial}} last run", "A"),
               target(f"sum by (trial) (rate(tuiapp_output_tokens_total{q}[1m]))", "{{trial}} rate 1m", "B")],
              description="Aggregate completion tokens per second"),
        panel(7, "TTFT and TPOT p50 / p99", "timeseries", (16, 8, 8, 8),
              [target(f"histogram_quantile(0.5, sum by (le, trial) (rate(tuiapp_ttft_seconds_bucket{q}[1m])))",
                      "TTFT p50 {{trial}}", "A"),
               target(f"histogram_quantile(0.99, sum by (le, trial) (rate(tuiapp_ttft_seconds_bucket{q}[1m])))",
                      "TTFT p99 {{trial}}", "B"),
               target(f"histogram_quantile(0.5, sum by (le, trial) (rate(tuiapp_tpot_seconds_bucket{q}[1m])))",
                      "TPOT p50 {{trial}}", "C"),
               target(f"histogram_quantile(0.99, sum by (le, trial) (rate(tuiapp_itl_seconds_bucket{q}[1m])))",
                      "ITL p99 {{trial}}", "D")], unit="s"),
        panel(8, "Requests by outcome", "timeseries", (0, 16, 8, 7),
              [target(f"sum by (outcome) (rate(tuiapp_requests_total{q}[1m]))", "{{outcome}}", "A"),
               target(f"sum by (reason) (rate(tuiapp_request_errors_total{q}[1m]))", "error: {{reason}}", "B")],
              unit="reqps"),
        panel(9, "Speculative acceptance length", "timeseries", (8, 16, 8, 7),
              [target(f"tuiapp_spec_accept_length{q}", "tuiapp {{trial}}", "A"),
               target("sglang:spec_accept_length", "sglang {{instance}}", "B")],
              description="Tokens accepted per verify step: tuiapp per run, SGLang's own gauge"),
        panel(10, "Server's own view (SGLang /metrics)", "timeseries", (16, 16, 8, 7),
              [target("sglang:gen_throughput", "gen tok/s {{instance}}", "A"),
               target("sglang:num_running_reqs", "running {{instance}}", "B"),
               target("sglang:num_queue_reqs", "queued {{instance}}", "C"),
               target("sglang:token_usage", "KV usage {{instance}}", "D")]),
        panel(18, "Load curve: output tok/s and TTFT p99 per load point", "table", (0, 23, 24, 6),
              [target(f"tuiapp_point_output_tokens_per_second{q}", "", "A", instant=True, fmt="table"),
               target('tuiapp_point_latency_seconds{latency="ttft", quantile="0.99", trial=~"$trial"}', "", "B",
                      instant=True, fmt="table"),
               target(f"tuiapp_point_goodput_ratio{q}", "", "C", instant=True, fmt="table")],
              description="One row per trial and load point of a sweep (--sweep, --request-rate)",
              transformations=[{"id": "merge", "options": {}}]),
        row(11, "Incidents", 29),
        panel(12, "Incidents by kind", "timeseries", (0, 30, 8, 8),
              [target("sum by (kind) (increase(tuiapp_incidents_total[5m]))", "{{kind}}", "A"),
               target("sum by (kind) (increase(tuiapp_incident_ranks_total[5m]))", "{{kind}} rank-hits", "B")],
              options={"legend": {"displayMode": "table", "placement": "right"}}),
        panel(13, "Incidents (kind, ranks, message)", "table", (8, 30, 16, 8),
              [target("tuiapp_incident_info", "", "A", instant=True, fmt="table")],
              description="One row per incident tuiapp flagged, with the ranks it reached and its message",
              transformations=HIDE_META_COLUMNS),
        row(14, "GPUs", 38),
        panel(15, "GPU memory used", "timeseries", (0, 39, 8, 8),
              [target("tuiapp_gpu_memory_used_bytes", "tuiapp GPU {{gpu}}", "A"),
               target("DCGM_FI_DEV_FB_USED * 1048576", "dcgm GPU {{gpu}} {{Hostname}}", "B")], unit="bytes"),
        panel(16, "PCIe throughput", "timeseries", (8, 39, 8, 8),
              [target("tuiapp_gpu_pcie_rx_bytes_per_second", "RX GPU {{gpu}}", "A"),
               target("tuiapp_gpu_pcie_tx_bytes_per_second", "TX GPU {{gpu}}", "B"),
               # dcgm-exporter's PCIe fields are gauges already in bytes/s: rate() of them is nonsense
               target("DCGM_FI_PROF_PCIE_RX_BYTES", "dcgm RX GPU {{gpu}}", "C"),
               target("DCGM_FI_PROF_PCIE_TX_BYTES", "dcgm TX GPU {{gpu}}", "D")], unit="Bps",
              description="tuiapp's NVML counters and dcgm-exporter's DCGM_FI_PROF_PCIE_*_BYTES gauges, both bytes/s"),
        panel(17, "GPU utilisation and power", "timeseries", (16, 39, 8, 8),
              [target("tuiapp_gpu_utilization_ratio * 100", "util % GPU {{gpu}}", "A"),
               target("DCGM_FI_DEV_GPU_UTIL", "dcgm util % GPU {{gpu}}", "B"),
               target("tuiapp_gpu_power_watts", "W GPU {{gpu}}", "C")]),
    ]
    return {
        "title": "tuiapp: SGLang tuning session",
        "uid": "tuiapp-session",
        "description": "tuiapp's live session (--metrics-port) beside SGLang's /metrics and dcgm-exporter",
        "tags": ["tuiapp", "sglang", "gpu"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "5s",
        "timezone": "browser",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            {"name": "trial", "type": "query", "datasource": DS, "label": "Trial", "includeAll": True,
             "multi": True, "allValue": ".*", "refresh": 2,
             "query": {"query": "label_values(tuiapp_runs_total, trial)", "refId": "trial"},
             "definition": "label_values(tuiapp_runs_total, trial)"},
        ]},
        "annotations": {"list": [
            {"name": "incidents", "datasource": DS, "enable": True, "iconColor": "red",
             "expr": "changes(tuiapp_incidents_total[1m]) > 0", "titleFormat": "incident: {{kind}}",
             "step": "15s"},
        ]},
        "panels": panels,
    }


def render() -> str:
    return json.dumps(build(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
