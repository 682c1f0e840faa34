"""Acceptance per position and the wedge incident where results go: the Prometheus endpoint,
the report (Markdown and so HTML), a replayed recording."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tuiapp.events import Alert, RunDone, ServerInfo, ServerStats, TrialState
from tuiapp.record.acceptance_section import NO_HISTOGRAM, NO_SPEC, acceptance_section
from tuiapp.record.metrics_endpoint import MetricsEndpoint


def _samples(url: str) -> dict[tuple[str, tuple], float]:
    text = httpx.get(url, timeout=10).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _run(i, hist, caps=None, trial="eagle3"):
    return RunDone(run_index=i, requests=4, duration_s=2.0, decode_tok_s=54.0, output_tok_s=200.0, trial=trial,
                   spec_accept_histogram=hist, spec_cap_histogram=caps)


@pytest.fixture
def endpoint():
    ep = MetricsEndpoint("127.0.0.1", 0)
    yield ep
    ep.close()


def test_endpoint_exports_positions_lengths_new_families_and_dp_ranks(endpoint):
    ep = endpoint
    ep.apply(TrialState(name="eagle3", index=1, total=1, phase="running"))
    ep.apply(_run(0, [10, 20, 30, 40]))
    ep.apply(_run(1, [10, 18, 54, 18], [0, 0, 50, 50]))
    ep.apply(ServerStats(source="metrics", kv_available_tokens=9000, utilization=0.5, retractions_total=3,
                         dp_imbalance_ratio=1.25, spec_num_steps=2))
    ep.apply(Alert(alert_kind="hang", message="DP rank 1 wedged", source="loads", dp_ranks=[1], alert_id=4_100_001))
    got = _samples(ep.url)
    pos3 = (("position", "3"), ("trial", "eagle3"))
    assert got[("tuiapp_spec_position_accepted_steps_total", pos3)] == 40 + 18
    assert got[("tuiapp_spec_position_observed_steps_total", pos3)] == 100 + 50  # run 1: half its steps saw it
    assert got[("tuiapp_spec_position_acceptance_ratio", pos3)] == pytest.approx(58 / 150)
    assert got[("tuiapp_spec_accept_length_steps_total", (("length", "4"), ("trial", "eagle3")))] == 58
    assert got[("tuiapp_server_kv_available_tokens", ())] == 9000
    assert got[("tuiapp_server_dp_attention_imbalance_ratio", ())] == 1.25
    assert got[("tuiapp_server_spec_steps", ())] == 2
    assert got[("tuiapp_incident_ranks_total", (("kind", "hang"), ("rank", "dp1")))] == 1


def test_report_section_per_trial_and_without_speculation():
    events = [ServerInfo(url="u", speculative_algorithm="EAGLE3"), _run(0, [10, 18, 54, 18], [0, 0, 50, 50])]
    text = "\n".join(acceptance_section(events))
    assert "| eagle3 | 100 | 90.0% (then 90.0%) | 72.0% (then 80.0%) | 36.0% (then 50.0%), seen by 50% of steps |" in text
    assert "| 2.80 | 10 / 18 / 54 / 18 |" in text
    assert acceptance_section([ServerInfo(url="u")])[0] == NO_SPEC
    assert acceptance_section([ServerInfo(url="u", speculative_algorithm="EAGLE"), _run(0, None)])[0] == NO_HISTOGRAM


def test_a_recording_replays_the_acceptance_per_position():
    """The campaign stream's eagle3 trial, through the recording format (dump/load) into the
    dashboard's store, as replay feeds it: the trial's pooled histogram gives its positions."""
    from tuiapp.events import dump_event, load_event
    from tuiapp.sim.synthetic import campaign_events
    from tuiapp.tui.store import DashboardStore

    store, seen = DashboardStore(), {}
    for ev in campaign_events(120.0, gpus=1):
        store.apply(load_event(dump_event(ev)))
        if store.current_trial and store.spec_tally.requests:
            seen[store.current_trial] = [round(p.conditional, 2) for p in store.spec_tally.positions()]
    assert seen == {"eagle3": [0.75, 0.6, 0.46]}  # (27, 32, 26, 22) per request: 0.75, 0.6, 0.45 modelled
