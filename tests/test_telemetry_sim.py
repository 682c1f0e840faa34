"""Simulated GPUs: SimBackend against a tiny fake /sim/gpus server and the real simulator."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tuiapp.events import GpuSample, Note
from tuiapp.telemetry import open_backend, run_gpu_sampler
from tuiapp.telemetry.sim_backend import SimBackend

GIB = 1 << 30


class FakeSim:
    """Serves the simulator's GPU model: cumulative counters at fixed rates on a clock the
    test moves (``t_s``)."""

    def __init__(self, n_gpus: int = 2, tx_bytes_s: float = 1e9, rx_bytes_s: float = 3e9,
                 step_s: float = 0.0) -> None:
        self.t_s = 1000.0
        self.step_s = step_s  # the clock moves this much after each request
        self.n_gpus, self.tx, self.rx = n_gpus, tx_bytes_s, rx_bytes_s
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path != "/sim/gpus":
                    self.send_error(404)
                    return
                body = json.dumps(fake.model()).encode()
                fake.t_s += fake.step_s
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def model(self) -> dict:
        t = self.t_s - 1000.0
        return {"t_s": self.t_s, "gpus": [{
            "index": i, "uuid": f"GPU-sim-{i}", "name": "NVIDIA RTX PRO 6000 Blackwell",
            "mem_total_bytes": 96 * GIB, "mem_used_bytes": 80 * GIB, "mem_reserved_bytes": GIB // 2,
            "util_pct": 97, "power_w": 410.5, "temp_c": 61, "sm_clock_mhz": 2430,
            "pcie_gen": 5, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16,
            "pcie_tx_bytes_total": int(self.tx * t), "pcie_rx_bytes_total": int(self.rx * t),
        } for i in range(self.n_gpus)]}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_sim():
    sim = FakeSim()
    yield sim
    sim.close()


def gpus(events):
    return [e for e in events if isinstance(e, GpuSample)]


def test_rates_come_from_counter_deltas_over_sim_time(fake_sim):
    b = SimBackend(fake_sim.url)
    first = b.sample()
    assert not [e for e in first if isinstance(e, Note)]
    g0 = gpus(first)[0]
    assert g0.pcie_rx_bytes_s is None  # one reading is not a rate yet
    assert (g0.uuid, g0.mem_used_bytes, g0.util_pct, g0.pcie_method) == ("GPU-sim-0", 80 * GIB, 97, "sim")
    fake_sim.t_s += 2.0
    s = gpus(b.sample())
    assert [g.index for g in s] == [0, 1]
    assert s[0].pcie_tx_bytes_s == pytest.approx(1e9)
    assert s[0].pcie_rx_bytes_s == pytest.approx(3e9)
    b.close()


def test_unreachable_simulator_leaves_its_gpus_with_no_readings(fake_sim):
    b = SimBackend(fake_sim.url)
    b.sample()
    fake_sim.close()  # the server died
    events = b.sample()
    notes = [e for e in events if isinstance(e, Note)]
    # a trial's server stopping is every trial's end: said, not warned about
    assert len(notes) == 1 and "not answering" in notes[0].text and notes[0].level == "info"
    s = gpus(events)
    assert len(s) == 2
    for g in s:  # n/a, never a reading of 0 nobody took
        assert g.mem_used_bytes is None and g.util_pct is None and g.pcie_rx_bytes_s is None
        assert g.mem_total_bytes == 96 * GIB and g.uuid.startswith("GPU-sim-")  # still the same GPUs
    assert not [e for e in b.sample() if isinstance(e, Note)]  # said once
    b.close()


def test_simulator_coming_back_is_noted_and_rates_restart(fake_sim):
    b = SimBackend(fake_sim.url)
    b.sample()
    url = b.url
    b.url = "http://127.0.0.1:9/sim/gpus"  # as if the server went away
    b.sample()
    b.url = url
    events = b.sample()
    assert [e.text for e in events if isinstance(e, Note)] == [f"simulated GPUs: {url} reachable again"]
    assert gpus(events)[0].pcie_rx_bytes_s is None  # counters may have restarted: no rate yet
    b.close()


def test_never_started_simulator_still_has_n_gpus():
    b = SimBackend("http://127.0.0.1:9", n_gpus=8)  # nothing listens on the discard port
    s = gpus(b.sample())
    assert [g.index for g in s] == list(range(8))
    assert all(g.mem_used_bytes is None for g in s)
    b.close()


async def test_sampler_over_the_sim_backend(fake_sim):
    backend, note = open_backend("sim", sim_url=fake_sim.url, n_sim_gpus=2)
    assert "simulated" in note
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_gpu_sampler(events.append, backend, interval_s=0.1, stop=stop))
    for _ in range(4):
        await asyncio.sleep(0.1)
        fake_sim.t_s += 0.5
    stop.set()
    await asyncio.wait_for(task, 2)
    rates = [g.pcie_rx_bytes_s for g in gpus(events) if g.pcie_rx_bytes_s]
    assert rates and all(r >= 0 for r in rates)


@pytest.mark.slow
def test_against_the_real_simulator():
    process = pytest.importorskip("tuiapp.sim.process")
    sim = process.SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"], speed=20)
    try:
        sim.wait_ready(30)
        b = SimBackend(sim.url)
        first = gpus(b.sample())
        time.sleep(0.3)
        second = gpus(b.sample())
        assert [g.index for g in second] == list(range(8))
        assert len({g.uuid for g in second}) == 8
        assert all(g.mem_used_bytes and g.mem_used_bytes > 0 for g in second)  # weights loaded
        assert all(g.pcie_tx_bytes_s is not None and g.pcie_tx_bytes_s >= 0 for g in second)
        assert [g.uuid for g in first] == [g.uuid for g in second]
        sim.proc.kill()
        sim.proc.wait(10)
        dead = gpus(b.sample())
        assert [g.uuid for g in dead] == [g.uuid for g in second]
        assert all(g.mem_used_bytes is None and g.mem_total_bytes for g in dead)
        b.close()
    finally:
        if sim.proc.poll() is None:
            sim.proc.kill()
