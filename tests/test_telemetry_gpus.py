"""`tuiapp gpus` end to end (fake NVML, fake simulator, recorded dcgm-exporter text) and
the host sampler."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_telemetry_dcgm import Exporter
from test_telemetry_fakes import FakeNvml, fake_gpus
from test_telemetry_sim import FakeSim

from tuiapp.cli import main
from tuiapp.events import HostSample
from tuiapp.telemetry import run_host_sampler
from tuiapp.telemetry.host import tree_rss_bytes

DATA = Path(__file__).parent / "data" / "telemetry"


@pytest.fixture
def no_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], init_error=12))


def test_no_driver_is_one_line_and_exit_1(no_driver, capsys):
    assert main(["gpus", "--interval", "0.05"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "tuiapp gpus: telemetry off: NVML not available (no NVIDIA driver)\n"


def test_no_driver_json_still_parses(no_driver, capsys):
    assert main(["gpus", "--json", "--interval", "0.05"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpus"] == [] and "no NVIDIA driver" in doc["note"]


def test_table_from_fake_nvml_shows_na(monkeypatch, capsys):
    gpus = fake_gpus(2, rx_bytes_s=25e9)
    gpus[1].unsupported = {"power", "temp"}
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(gpus, real_time=True))
    assert main(["gpus", "--interval", "0.1"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["GPU", "name", "mem"]
    assert len(lines) == 3
    assert "123 W" in lines[1] and "41 C" in lines[1]
    assert lines[2].count("n/a") == 2 and "gen5 x16" in lines[2]
    assert "counters" in lines[1]
    rx = lines[1].split("/s")[1].split()[-2:]  # PCIe RX column, e.g. ['25.0', 'GB']
    assert rx == ["25.0", "GB"]
    # the dashboard's units: memory binary (GiB), rates decimal (GB/s)
    g = gpus[0]
    assert f" / {g.mem_total / 2**30:.1f} GiB " in lines[1], lines[1]


def test_json_from_the_simulator(capsys):
    sim = FakeSim(step_s=1.0)
    try:
        assert main(["gpus", "--sim", sim.url, "--json", "--interval", "0.1"]) == 0
    finally:
        sim.close()
    doc = json.loads(capsys.readouterr().out)
    assert [g["index"] for g in doc["gpus"]] == [0, 1]
    assert doc["gpus"][0]["pcie_rx_bytes_s"] == pytest.approx(3e9)
    assert doc["gpus"][0]["kind"] == "gpu"  # GpuSample fields, loadable by tuiapp.events


def test_unreachable_simulator_is_no_snapshot(capsys):
    # nothing listens on the discard port: no GPUs were read, whatever the live view shows
    assert main(["gpus", "--sim", "http://127.0.0.1:9", "--interval", "0.05"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "tuiapp gpus: telemetry off: no simulator answers at http://127.0.0.1:9\n"


def test_remote_gpus_from_dcgm_exporter_without_local_driver(no_driver, capsys):
    ex = Exporter((DATA / "dcgm_node_a.prom").read_text())
    try:
        assert main(["gpus", "--gpu-source", ex.url, "--interval", "0.05"]) == 0
    finally:
        ex.close()
    out, err = capsys.readouterr()
    rows = out.splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["node-a:0", "node-a:1"]
    assert "no NVIDIA driver" in err  # the local half is off, said on stderr


def test_sim_and_gpu_source_together_is_a_usage_error(capsys):
    assert main(["gpus", "--sim", "http://x", "--gpu-source", "http://y"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_tree_rss_counts_children():
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(50 << 20); time.sleep(30)"])
    try:
        import psutil

        me = psutil.Process().memory_info().rss
        for _ in range(50):  # wait for the child's 50 MiB to be resident
            total = tree_rss_bytes(psutil.Process().pid)
            if total and total > me + (40 << 20):
                break
            import time

            time.sleep(0.1)
        assert total > me + (40 << 20)
    finally:
        child.kill()
        child.wait()
    assert tree_rss_bytes(2**22 + 12345) is None  # no such process


async def test_host_sampler_publishes_host_samples():
    import os

    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_host_sampler(events.append, server_pid=os.getpid(),
                                                interval_s=0.1, stop=stop))
    await asyncio.sleep(0.45)
    stop.set()
    await asyncio.wait_for(task, 2)
    assert len(events) >= 2 and all(isinstance(e, HostSample) for e in events)
    e = events[-1]
    assert 0 <= e.cpu_pct <= 100 and 0 < e.mem_used_bytes < e.mem_total_bytes
    assert e.server_rss_bytes and e.server_rss_bytes > 10 << 20
