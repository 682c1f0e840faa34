"""What a trial's events add up to: its cause of failure."""

from tuiapp.events import Alert
from tuiapp.trials.collector import TrialCollector


def test_the_first_of_two_alerts_without_an_id_is_the_trials_cause():
    collector = TrialCollector()
    collector.observe(Alert(t_s=1, alert_kind="xid", source="nvml", message="GPU 2: Xid 79"))
    collector.observe(Alert(t_s=2, alert_kind="xid", source="nvml", message="GPU 5: Xid 79"))
    assert collector.first_alert().message == "GPU 2: Xid 79"
    assert [a.message for a in collector.alerts.values()] == ["GPU 2: Xid 79", "GPU 5: Xid 79"]


def test_a_specific_alert_earlier_in_the_log_wins_over_a_generic_one():
    collector = TrialCollector()
    collector.observe(Alert(t_s=1, alert_kind="crash", message="scheduler died", first_line=90, alert_id=1))
    collector.observe(Alert(t_s=2, alert_kind="oom", message="CUDA out of memory", first_line=40, alert_id=2))
    collector.observe(Alert(t_s=3, alert_kind="oom", message="CUDA out of memory", first_line=40, ranks=[1],
                            alert_id=2))
    assert collector.first_alert().alert_kind == "oom"
    assert len(collector.alerts) == 2


def test_pcie_counts_only_samples_whose_interval_lies_within_the_benchmark():
    """A sample's rates average the time since that GPU's previous sample, at any cadence."""
    from tuiapp.events import GpuSample

    def sample(t_s: float, gb_s: float, index: int = 0) -> GpuSample:
        return GpuSample(t_s=t_s, index=index, pcie_tx_bytes_s=gb_s * 1e9, pcie_rx_bytes_s=0.0)

    collector = TrialCollector()
    collector.observe(sample(99.0, 50.0))  # start-up: weights over PCIe
    collector.benchmarking = True
    collector.bench_started_s = 100.0
    collector.observe(sample(100.5, 40.0))  # its interval (99.0-100.5) began before the benchmark
    assert collector.pcie_avg_peak() == (None, None)
    collector.observe(sample(101.5, 2.0))  # 1 s cadence: 100.5-101.5, all benchmark
    collector.observe(sample(101.75, 4.0))  # 4 Hz: counts as well
    collector.observe(sample(101.6, 9.0, index=1))  # GPU 1's first sample: no interval known
    assert collector.pcie_avg_peak() == (3e9, 4e9)


def test_what_a_server_prints_after_we_stopped_it_never_judges_the_trial():
    collector = TrialCollector()
    collector.observe(Alert(t_s=1, alert_kind="error", message="before the stop", first_line=10, alert_id=1))
    collector.stopped(20)  # a ready timeout: we stopped a server that was still running
    collector.observe(Alert(t_s=2, alert_kind="keyerror", message="KeyError: 'x'", first_line=21, alert_id=2))
    assert collector.first_alert().message == "before the stop"
    assert len(collector.alerts) == 2  # (still in the row's alerts)
    only_after = TrialCollector()
    only_after.stopped(20)
    only_after.observe(Alert(t_s=2, alert_kind="keyerror", message="KeyError: 'x'", first_line=21, alert_id=2))
    assert only_after.first_alert() is None  # the trial is judged by its timeout


def test_over_slurm_the_alerts_seen_by_our_stop_are_the_bound():
    # the nodes' logs have no one numbering: what arrives after we cancelled the job is ours
    collector = TrialCollector()
    collector.observe(Alert(t_s=1, alert_kind="error", message="node n2", first_line=900, alert_id=1, nodes=["n2"]))
    collector.stopped()
    collector.observe(Alert(t_s=2, alert_kind="crash", message="killed", first_line=3, alert_id=2, nodes=["n1"]))
    assert collector.first_alert().message == "node n2"  # not the earlier line of another node's log
    collector.observe(Alert(t_s=3, alert_kind="error", message="node n2", first_line=900, alert_id=1,
                            nodes=["n2", "n1"]))  # an update of one seen before still counts
    assert collector.first_alert().nodes == ["n2", "n1"]
    only_after = TrialCollector()
    only_after.stopped()
    only_after.observe(Alert(t_s=2, alert_kind="crash", message="killed", first_line=3, alert_id=2))
    assert only_after.first_alert() is None
