"""The simulator's PCIe never carries more than the Gen5 x16 link it models (~63 GB/s of
payload a direction): weight loading and the scheduler's steady traffic share the link."""

from tuiapp.sim import model
from tuiapp.sim.gpus import Gpu

LINK = model.PCIE_LINK_BYTES_PER_S


def _rx_rates(g: Gpu, start: float, end: float, step: float = 0.05) -> list[float]:
    rates, t = [], start
    prev = g.snapshot(t)["pcie_rx_bytes_total"]
    while t < end:
        t += step
        total = g.snapshot(t)["pcie_rx_bytes_total"]
        rates.append((total - prev) / step)
        prev = total
    return rates


def test_weight_loading_beside_steady_traffic_stays_within_the_link():
    g = Gpu(0, seed=1)
    g.set_rates(0.0, 8e9, 8e9)  # decode traffic of a running trial
    g.rx_ramp(0.0, 200e9, 0.5)  # weights asked to arrive at 400 GB/s
    rates = _rx_rates(g, 0.0, 5.0)
    assert max(rates) <= LINK * 1.001 and max(rates) > 0.9 * LINK  # the link is full, never over
    assert LINK <= 63.1e9  # Gen5 x16 payload: 16 lanes x 3.938 GB/s


def test_the_scheduler_cannot_ask_for_more_than_the_link():
    g = Gpu(0, seed=1)
    g.set_rates(0.0, 90e9, 90e9)
    g.rx_ramp(0.0, 10e9, 0.1)
    assert max(_rx_rates(g, 0.0, 2.0)) <= LINK * 1.001
    assert g.tx_rate <= LINK
