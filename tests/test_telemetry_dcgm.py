"""dcgm-exporter source: recorded exporter text (tests/data/telemetry) parsed and served."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tuiapp.events import Alert, GpuSample, Note
from tuiapp.telemetry.dcgm_backend import DcgmBackend, metrics_url, parse_exporter_text, to_sample

DATA = Path(__file__).parent / "data" / "telemetry"
MIB = 1 << 20


class Exporter:
    """Serves a text body at /metrics, like dcgm-exporter on :9400."""

    def __init__(self, body: str) -> None:
        self.body = body
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                data = exporter.body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def exporters():
    made = [Exporter((DATA / f"dcgm_node_{n}.prom").read_text()) for n in ("a", "b")]
    yield made
    for e in made:
        e.close()


def test_parse_node_with_profiling_fields():
    samples = [to_sample(g) for g in parse_exporter_text((DATA / "dcgm_node_a.prom").read_text())]
    assert [(s.node, s.index) for s in samples] == [("node-a", 0), ("node-a", 1)]
    g0 = samples[0]
    assert g0.uuid == "GPU-0c3f6a2e-8f7b-4d1e-9a51-6f3b2d7c1e04" and g0.name == "NVIDIA H200"
    assert g0.mem_used_bytes == 129448 * MIB  # FB values are MiB
    assert g0.mem_reserved_bytes == 615 * MIB
    assert g0.mem_total_bytes == (129448 + 13305 + 615) * MIB
    assert (g0.pcie_tx_bytes_s, g0.pcie_rx_bytes_s, g0.pcie_method) == (1843200512, 2621440000, "dcgm")
    assert (g0.nvlink_tx_bytes_s, g0.nvlink_rx_bytes_s) == (96636764160, 96502546432)
    assert (g0.util_pct, g0.power_w, g0.temp_c, g0.sm_clock_mhz) == (100, 612.338, 58, 1980)
    assert g0.pcie_replay_count == 0


def test_blank_values_are_na_and_mig_rows_are_skipped():
    g1 = to_sample(parse_exporter_text((DATA / "dcgm_node_a.prom").read_text())[1])
    assert g1.pcie_replay_count is None  # DCGM's int64 blank sentinel
    assert g1.mem_used_bytes == 129442 * MIB  # the whole GPU, not its MIG instance's 17000 MiB


def test_node_without_profiling_module_has_no_pcie():
    (g,) = [to_sample(g) for g in parse_exporter_text((DATA / "dcgm_node_b.prom").read_text())]
    assert g.node == "node-b" and g.name.startswith("NVIDIA RTX PRO 6000")
    assert g.pcie_tx_bytes_s is None and g.pcie_method is None
    assert g.pcie_replay_count == 12


def test_metrics_url_forms():
    assert metrics_url("node-a:9400") == "http://node-a:9400/metrics"
    assert metrics_url("http://node-a:9400/") == "http://node-a:9400/metrics"
    assert metrics_url("https://x/custom/path") == "https://x/custom/path"


def test_backend_reads_several_nodes_and_survives_one_going_down(exporters):
    a, b = exporters
    backend = DcgmBackend([a.url, b.url + "/metrics"], timeout_s=1.0)
    events = backend.sample()
    gpus = [e for e in events if isinstance(e, GpuSample)]
    assert [(g.node, g.index) for g in gpus] == [("node-a", 0), ("node-a", 1), ("node-b", 0)]
    assert len([e for e in events if isinstance(e, Note)]) == 2
    b.close()
    events = backend.sample()
    notes = [e for e in events if isinstance(e, Note)]
    assert len(notes) == 1 and "unreachable" in notes[0].text and b.url in notes[0].text
    gpus = [e for e in events if isinstance(e, GpuSample)]
    down = [g for g in gpus if g.node == "node-b"]
    assert len(down) == 1 and down[0].uuid and down[0].mem_used_bytes is None  # n/a, not stale
    assert [g.mem_used_bytes for g in gpus if g.node == "node-a"] == [129448 * MIB, 129442 * MIB]
    backend.close()


def test_new_xid_on_a_remote_gpu_is_an_alert(exporters):
    a, _ = exporters
    backend = DcgmBackend([a.url], timeout_s=1.0)
    assert not [e for e in backend.sample() if isinstance(e, Alert)]
    lines = [ln if not (ln.startswith("DCGM_FI_DEV_XID_ERRORS") and 'gpu="1"' in ln)
             else ln.rsplit(" ", 1)[0] + " 79" for ln in a.body.splitlines()]
    a.body = "\n".join(lines) + "\n"
    alerts = [e for e in backend.sample() if isinstance(e, Alert)]
    assert [(x.alert_kind, x.source, x.message) for x in alerts] == [
        ("xid", "dcgm", "node-a GPU 1: Xid 79")]
    assert not [e for e in backend.sample() if isinstance(e, Alert)]  # same value: no repeat
    backend.close()


def test_garbage_body_is_a_note_not_a_crash():
    ex = Exporter("this is not prometheus text {{{\n")
    try:
        backend = DcgmBackend([ex.url], timeout_s=1.0)
        events = backend.sample()
        assert [e.level for e in events if isinstance(e, Note)] == ["warning"]
        assert not [e for e in events if isinstance(e, GpuSample)]
        backend.close()
    finally:
        ex.close()


def test_auto_merges_local_nvml_and_remote_nodes_once_each(monkeypatch, exporters):
    import sys

    from test_telemetry_fakes import FakeNvml, fake_gpus

    from tuiapp.telemetry import open_backend

    local = fake_gpus(2)
    local[1].uuid = "GPU-7d9e1b44-2c6a-4f0e-b8d3-91a5c0e4f7b2"  # node-a's GPU 1 is this machine's
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(local))
    a, b = exporters
    backend, note = open_backend("auto", dcgm_urls=[a.url, b.url])
    assert backend.name == "nvml+dcgm" and "plus dcgm-exporter" in note
    gpus = [e for e in backend.sample() if isinstance(e, GpuSample)]
    assert [(g.node, g.index) for g in gpus] == [(None, 0), (None, 1), ("node-a", 0), ("node-b", 0)]
    assert gpus[1].pcie_method == "counters"  # the local reading wins
    backend.close()
