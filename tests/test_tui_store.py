"""The dashboard's latest-value store and text formatting (no Textual involved)."""

from pathlib import Path

from tuiapp.commands.preview import read_events
from tuiapp.common.numfmt import rate
from tuiapp.events import (
    Alert,
    BenchSummary,
    GpuSample,
    LogLine,
    ReplaySeek,
    RunDone,
    ServerState,
    TrialResult,
    TrialState,
)
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore

EVENTS = Path(__file__).parent / "data" / "tui" / "dashboard.jsonl"


def test_alert_with_same_id_replaces_the_earlier_one_and_ranks_grow():
    store = DashboardStore()
    store.apply(Alert(t_s=10, alert_kind="oom", message="CUDA out of memory", ranks=[3], alert_id=4))
    store.apply(Alert(t_s=11, alert_kind="assertion", message="AssertionError", ranks=[0], alert_id=5))
    store.apply(Alert(t_s=12, alert_kind="oom", message="CUDA out of memory", ranks=[5], alert_id=4))
    alerts = store.alerts_newest_first
    assert [a.alert_kind for a in alerts] == ["assertion", "oom"]
    assert alerts[1].ranks == [3, 5]



def test_alerts_without_an_id_are_each_their_own_incident():
    store = DashboardStore()
    store.apply(Alert(t_s=10, alert_kind="xid", source="nvml", message="GPU 2: Xid 79"))
    store.apply(Alert(t_s=11, alert_kind="xid", source="nvml", message="GPU 5: Xid 79"))
    assert [a.message for a in store.alerts_newest_first] == ["GPU 5: Xid 79", "GPU 2: Xid 79"]

def test_uptime_and_relative_times_come_from_event_time_not_the_clock():
    store = DashboardStore()
    store.apply(LogLine(t_s=1000.0, line_no=1, text="starting"))
    store.apply(ServerState(t_s=1005.0, state="starting"))
    store.apply(GpuSample(t_s=1095.5, index=0))
    assert store.uptime_s == 90.5
    assert store.rel_s(1095.5) == 95.5
    store.apply(ServerState(t_s=1100.0, state="failed", message="exit 1"))
    store.apply(GpuSample(t_s=1200.0, index=0))
    assert store.uptime_s == 95.0  # frozen at the failure


def test_run_stats_prefer_the_summary_and_reset_per_trial():
    store = DashboardStore()
    for i, v in enumerate([82.0, 82.2, 81.9]):
        store.apply(RunDone(t_s=i, run_index=i, requests=5, duration_s=5, decode_tok_s=v, output_tok_s=v, trial="a"))
    mean, sd, ci95, n = store.run_stats()
    assert n == 3 and abs(mean - 82.0333) < 1e-3 and sd is not None and ci95 is None
    store.apply(RunDone(t_s=9, run_index=0, requests=5, duration_s=5, decode_tok_s=89.5, output_tok_s=89, trial="b"))
    assert store.run_stats()[0] == 89.5 and store.run_stats()[3] == 1
    store.apply(BenchSummary(t_s=10, runs=1, mean_decode_tok_s=89.5, sd_decode_tok_s=None,
                             ci95_decode_tok_s=(88.0, 91.0), trial="b"))
    assert store.run_stats()[2] == (88.0, 91.0)


def test_versions_move_only_for_the_panels_an_event_touches():
    store = DashboardStore()
    store.apply(GpuSample(t_s=1, index=0))
    before = dict(store.versions)
    store.apply(GpuSample(t_s=1, index=1))  # same time: the header (uptime) does not move
    changed = {k for k in before if store.versions[k] != before[k]}
    assert changed == {"gpus"}


def test_trial_events_fill_the_ledger_and_alerts_attach_to_the_running_trial():
    store = DashboardStore()
    store.apply(TrialState(t_s=1, name="eagle3", index=2, total=8, phase="running"))
    store.apply(Alert(t_s=2, alert_kind="nccl", message="NCCL error", alert_id=1))
    store.apply(TrialResult(t_s=3, name="eagle3", status="nccl", row={"verdict": "dead end"}))
    row = store.trials["eagle3"]
    assert row.result.status == "nccl" and len(row.alert_keys) == 1


def test_replay_seek_clears_what_is_shown():
    store = DashboardStore()
    for event in read_events(EVENTS):
        store.apply(event)
    assert store.gpus and store.alerts and store.trials
    store.apply(ReplaySeek(t_s=store.first_t_s + 5, position_s=5))
    assert not store.gpus and not store.alerts and not store.trials and not store.log
    assert store.rel_s(store.now_t_s) == 5


def test_formatting_shows_none_as_na_never_zero():
    assert fmt.ms(None) == "n/a" and rate(None, compact=True) == "n/a"
    assert rate(3.2e9, compact=True) == "3.2G" and rate(850e6, compact=True) == "850M"
    assert rate(950e3, compact=True) == "950k" and rate(999_800, compact=True) == "1.0M"
    assert rate(99.97e6, compact=True) == "100M" and fmt.ms(0.0112) == "11.2 ms"
    assert fmt.clock(3725) == "1:02:05"
    assert fmt.spark([0, None, 8], 5, floor=0, ceiling=8) == "  ▁ █"
    assert fmt.spark_rows([0, 4, 8], 3, 2, floor=0, ceiling=8) == ["  █", "▁██"]
    assert fmt.bar(0.5, 10) == ("█" * 5, "░" * 5) and fmt.bar(None, 3) == ("", "···")


def test_pcie_history_scale_is_the_links_capacity_not_its_idle_generation():
    from tuiapp.tui.widgets.gpu_table import link_bytes_s

    idle_gen5 = GpuSample(t_s=0, index=0, pcie_gen=1, pcie_width=16, pcie_gen_max=5, pcie_width_max=16)
    assert abs(link_bytes_s(idle_gen5) - 63.0e9) < 0.1e9
    assert link_bytes_s(GpuSample(t_s=0, index=0, pcie_gen=4, pcie_width=8)) == 1.969e9 * 8
    assert link_bytes_s(GpuSample(t_s=0, index=0)) is None


def test_cancelled_request_is_neither_result_nor_failure():
    from tuiapp.events import RequestDone

    store = DashboardStore()
    store.apply(RequestDone(t_s=1, run_index=0, request_index=0, ok=False, error="HTTP 422: Unexpected fields"))
    store.apply(RequestDone(t_s=2, run_index=0, request_index=1, ok=False, error="cancelled", cancelled=True))
    assert store.requests_failed == 1 and store.last_request.error == "HTTP 422: Unexpected fields"


def test_pcie_history_log_scale_keeps_nccl_and_custom_allreduce_apart():
    """0.5 GB/s (NCCL's all-reduce) and 15 GB/s (the custom one) on a 63 GB/s link: a
    linear scale draws both in the bottom cell; the log scale three levels apart."""
    link = 63.0e9
    linear = fmt.spark([0.5e9, 15e9], 2, floor=0, ceiling=link)
    assert linear[0] == "▁" and linear[1] in "▁▂▃"
    logged = fmt.spark(fmt.log_levels([0.5e9, 15e9, 0.0, None], 1e7, link), 4, floor=0, ceiling=1)
    assert logged[3] == " " and logged[2] == "▁"  # no sample is a gap; an idle link sits at the floor
    assert " ▁▂▃▄▅▆▇█".index(logged[1]) - " ▁▂▃▄▅▆▇█".index(logged[0]) >= 3


def test_log_spark_is_the_log_levels_sparkline_in_one_pass():
    link = 63.0e9
    values = [None, 0.0, 1e6, 1e7, 2.5e7, 0.5e9, 15e9, 62e9, 63e9, 80e9, None, 3.3e8]
    for width in (0, 1, 5, len(values), 40):
        tail = values[-width:] if width else []
        assert fmt.log_spark(values, width, 1e7, link) == fmt.spark(fmt.log_levels(tail, 1e7, link), width,
                                                                     floor=0, ceiling=1)
    assert fmt.log_spark([None, None], 4, 1e7, link) == "    "


def test_charts_say_their_scale_and_unit():
    rows = fmt.axis_chart([0.050, 0.060, None, 0.070], 20, 3, "ttft", scale=1000, unit="ms", label_w=5)
    assert [axis for axis, _ in rows] == [" 70ms┤", " ttft│", " 45ms┤"]  # floor: 0.9 x the lowest
    assert all(len(axis) + len(bars) == 20 for axis, bars in rows)
    (one,) = fmt.axis_chart([47.0, 55.0], 30, 1, "run")
    assert one[0] == "run " and one[1].endswith(" 42–55")


def test_outcome_of_a_finished_campaign_names_the_best_trial_against_its_base():
    s = DashboardStore()
    rows = [("base", "ok", {"is_baseline": True, "verdict": "baseline", "mean_decode_tok_s": 82.0}),
            ("fast", "ok", {"baseline": "base", "verdict": "faster", "delta_pct": 9.2, "mean_decode_tok_s": 89.5}),
            ("dies", "oom", {"baseline": "fast", "dead_end": True})]
    for k, (name, status, row) in enumerate(rows):
        s.apply(TrialState(t_s=k, name=name, index=k, total=3, phase="running"))
        assert s.outcome() is None  # a trial is still running
        s.apply(TrialState(t_s=k + 0.5, name=name, index=k, total=3, phase="done" if status == "ok" else "failed"))
        before = dict(s.versions)
        s.apply(TrialResult(t_s=k + 0.6, name=name, status=status, row=row))
        assert s.versions["header"] > before["header"]  # the outcome shows without waiting for a tick
    assert s.finished
    assert s.outcome() == "campaign done: 2 ok, 1 failed, 1 dead end; best fast 89.5 tok/s +9.2% vs base"
    assert s.outcome(70) == "campaign done: 2 ok, 1 failed, 1 dead end; best fast 89.5 tok/s +9.2%"
    assert s.outcome(60) == "campaign done: 2 ok, 1 failed, 1 dead end; best fast +9.2%"


def test_an_attach_session_ends_with_its_benchmark_in_one_line():
    from tuiapp.events import BenchState

    s = DashboardStore()
    for k, tok_s in enumerate([82.0, 82.2, 81.9]):
        s.apply(RunDone(t_s=k, run_index=k, requests=1, duration_s=3.0, decode_tok_s=tok_s, output_tok_s=tok_s))
    s.apply(BenchState(t_s=2.5, state="running"))
    assert not s.finished and s.outcome() is None
    s.apply(BenchSummary(t_s=3, runs=3, mean_decode_tok_s=82.03, sd_decode_tok_s=0.15,
                         ci95_decode_tok_s=(81.66, 82.40)))
    s.apply(BenchState(t_s=3.1, state="done"))
    assert s.outcome() == "benchmark done: 3 runs, 82.0 ± 0.15 tok/s (95% CI 81.7–82.4)"
    assert s.outcome(40) == "benchmark done: 3 runs, 82.0 ± 0.15 tok/s"
