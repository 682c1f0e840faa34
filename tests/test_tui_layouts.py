"""Each dashboard mode at each size: every panel the mode promises is on screen with room for
its text, no panel title is cut, every percentile is labelled, and the screen is used to its
last row (docs/dashboard.md "Layouts"). Fed the fixed event lists of tests/data/tui/modes.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "data" / "tui"))

import modes  # noqa: E402

from tuiapp.commands.preview import preview_session, read_events  # noqa: E402
from tuiapp.events import dump_event  # noqa: E402
from tuiapp.tui.app import DashboardApp  # noqa: E402

CAMPAIGN = Path(__file__).parent / "data" / "tui" / "dashboard.jsonl"
SIZES = [(80, 24), (100, 30), (120, 40), (160, 48), (200, 60)]
# mode -> (events, panels it promises at every size)
MODES = {
    "attach": (lambda: modes.single(log=False), ["#header", "#throughput", "#latency", "#gpus", "#alerts"]),
    "launch": (lambda: modes.single(log=True), ["#header", "#throughput", "#latency", "#gpus", "#alerts", "#log"]),
    "campaign": (lambda: read_events(CAMPAIGN), ["#header", "#progress", "#throughput", "#acceptance", "#latency",
                                                 "#gpus", "#alerts", "#trials"]),
    "curve": (modes.curve, ["#header", "#progress", "#throughput", "#latency", "#curve", "#gpus", "#alerts",
                            "#trials"]),
    # a replay is laid out as its session was, with the timeline
    "replay": (lambda: read_events(CAMPAIGN), ["#header", "#progress", "#throughput", "#latency", "#gpus",
                                               "#alerts", "#trials", "#timeline"]),
}


class PausedReplay:
    """A replay held at 22:37 of 1:00:00: only the timeline reads it."""

    playing, speed, position_s, duration_s = False, 4.0, 1357.0, 3600.0

    def play(self) -> None: ...
    def pause(self) -> None: ...
    def set_speed(self, speed: float) -> None: ...
    def seek(self, position_s: float) -> None: ...
    def step(self) -> None: ...
    def next_alert(self) -> None: ...


def screen_text(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def settle(app, pilot, expected: int) -> None:
    for _ in range(500):
        if app.store.applied >= expected and not len(app.events):
            break
        await pilot.pause(0.01)
    assert app.store.applied == expected
    app.dashboard.paint()
    await pilot.pause()


async def shown(tmp_path, events, size, replay=None):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(dump_event(e) + b"\n" for e in events))
    session = preview_session(path)
    session.replay = replay
    app = DashboardApp(session)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot, len(events))
        screen = app.dashboard
        panels = {f"#{w.id}": Shown(w.region, str(w.border_title or "")) for w in screen.query("*")
                  if w.id and w.display and w.region.area}
        return set(screen.classes), panels, screen_text(app)


class Shown:
    """A panel as it was on screen (the app is gone once the test reads it)."""

    def __init__(self, region, title: str) -> None:
        self.region, self.title = region, title


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("mode", list(MODES))
async def test_each_mode_shows_its_panels_at_each_size(tmp_path, mode, size):
    make, promised = MODES[mode]
    classes, panels, text = await shown(tmp_path, make(), size, PausedReplay() if mode == "replay" else None)
    width, height = size
    for panel_id in promised:
        assert panel_id in panels, (mode, size, panel_id, sorted(panels))
        region = panels[panel_id].region
        assert region.right <= width and region.bottom <= height, (panel_id, region)
    # the server's queue and KV cache: in the perf row or the right column, one of them
    assert ("#server" in panels) != ("#server-row" in panels), sorted(panels)
    server = panels.get("#server") or panels["#server-row"]
    assert server.region.height >= (2 if height < 36 else 4), server.region
    for panel_id, panel in panels.items():  # a title cut with an ellipsis names nothing
        if panel.title:
            assert panel.title.split()[0] in "".join(text), (panel_id, panel.title)
    body = "\n".join(text)
    assert "TTFT" in body and "p50" in body and "p99" in body  # percentiles only with their labels
    assert "tok/s" in body
    # the whole screen is used: no blank row between the header and the footer
    blank = [y for y, line in enumerate(text[: height - 1]) if not line.strip()]
    assert len(blank) <= 3, (mode, size, blank)
    if mode == "curve":
        curve = panels["#curve"].region
        assert curve.height >= (8 if height >= 30 else 5) and curve.width >= width * 0.5
        assert "output tok/s aggregate" in body and "TTFT ms p50=A p99=a" in body
    if mode == "attach":
        assert "#log" not in panels and "#log-wide" not in panels  # no log: the charts take its rows
    expected = {"attach": "single", "launch": "single", "replay": "campaign"}.get(mode, mode)
    assert f"-mode-{expected}" in classes


async def test_a_failed_launch_shows_its_reason_in_the_main_panel(tmp_path):
    classes, panels, text = await shown(tmp_path, modes.failed_launch(), (100, 30))
    body = "\n".join(text)
    assert "FAILED" in body and "port 30000 on 127.0.0.1 is in use" in body
    throughput = panels["#throughput"].region
    assert throughput.width == 100  # the reason takes the row


async def test_a_new_trial_starts_without_the_previous_ones_figures(tmp_path):
    from tuiapp.events import RequestDone, ServerStats, TrialState
    from tuiapp.tui.store import DashboardStore

    s = DashboardStore()
    s.apply(TrialState(t_s=1, name="a", index=0, total=2, phase="running"))
    s.apply(RequestDone(t_s=2, run_index=0, request_index=0, ttft_s=0.5, tpot_s=0.1, e2e_s=3.0))
    s.apply(RequestDone(t_s=2.1, run_index=0, request_index=1, ok=False, error="HTTP 429: queue full"))
    assert s.latency.percentiles_ms()["TTFT"][0] == 500.0 and s.errors_by_reason == {"refused": 1}
    s.apply(TrialState(t_s=3, name="b", index=1, total=2, phase="running"))
    assert len(s.latency) == 0 and not s.errors_by_reason
    # the server's gauge still holds trial a's figure: no request of b came back yet, so no figure
    s.apply(ServerStats(t_s=4, source="metrics", gen_throughput_tok_s=900.0, running_reqs=1))
    assert s.server_tok_s[-1] is None
    s.apply(RequestDone(t_s=5, run_index=0, request_index=0, ttft_s=0.2, tpot_s=0.1, e2e_s=3.0))
    s.apply(ServerStats(t_s=6, source="metrics", gen_throughput_tok_s=310.0, running_reqs=1))
    assert s.server_tok_s[-1] == 310.0
    s.apply(ServerStats(t_s=11, source="metrics", gen_throughput_tok_s=310.0, running_reqs=0))
    assert s.server_tok_s[-1] is None and s.server_tok_s_now is None  # idle: the gauge's last value is no rate


def test_progress_has_an_eta_from_the_pace_so_far():
    from tuiapp.tui.store import DashboardStore

    s = DashboardStore()
    for event in modes.curve():
        s.apply(event)
    progress = s.progress()
    assert progress is not None and "trial 2/2" in progress.label and "point 4/6" in progress.label
    assert progress.eta_s is not None and progress.eta_s > 0 and 0 < progress.done_fraction < 1


async def test_the_dashboard_ends_with_the_headless_summary_and_its_point_table(tmp_path):
    events = modes.curve()
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(dump_event(e) + b"\n" for e in events))
    app = DashboardApp(preview_session(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, len(events))
    text = app.closing_summary()  # what run_app prints after q
    assert text.startswith("summary: ") and "1308 requests (0 failed)" in text
    table = text.splitlines()
    head = next(line for line in table if line.strip().startswith("load "))
    assert "base c=1" in head and "new c=4" in head  # a column per load, never pooled
    assert any(line.strip().startswith("Output token throughput (tok/s)") for line in table)
    assert any(line.strip().startswith("P99 TTFT (ms)") for line in table)


async def test_a_finished_campaign_shows_its_best_trial_not_its_last_failure(tmp_path):
    from tuiapp.events import TrialResult, TrialState

    events = [
        TrialState(t_s=1, name="base", index=0, total=2, phase="done"),
        TrialResult(t_s=2, name="base", status="ok", row={"mean_decode_tok_s": 82.0, "sd_decode_tok_s": 0.2,
                                                           "runs_decode_tok_s": [81.8, 82.2]}),
        TrialState(t_s=3, name="fusion", index=1, total=2, phase="failed", message="RuntimeError: no arch"),
        TrialResult(t_s=4, name="fusion", status="jit_arch", row={"first_error": "RuntimeError: no arch"}),
    ]
    classes, panels, text = await shown(tmp_path, events, (100, 30))
    body = "\n".join(text)
    assert "best base  82.0" in body and "FAILED" not in body
