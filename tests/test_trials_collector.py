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
