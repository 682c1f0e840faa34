"""Pilot tests of the dashboard: alert flow, ledger, log filter, live and replay keys, quitting."""

import asyncio
import re
from pathlib import Path

import pytest
from session_helpers import idle  # tests/ is on the path

from tuiapp.commands.preview import preview_session, read_events
from tuiapp.events import Alert, LogLine, ReplaySeek, ServerState
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.details import AlertScreen, ConfirmScreen, TrialScreen
from tuiapp.tui.widgets.alert_list import AlertList
from tuiapp.tui.widgets.ledger_table import LedgerTable
from tuiapp.tui.widgets.log_tail import LogTail
from tuiapp.tui.widgets.timeline_bar import TimelineBar

EVENTS = Path(__file__).parent / "data" / "tui" / "dashboard.jsonl"
OOM = next(e for e in read_events(EVENTS) if isinstance(e, Alert) and e.alert_kind == "oom")


async def settle(pilot, expected: int) -> None:
    app = pilot.app
    for _ in range(200):
        if app.store.applied >= expected and not len(app.events):
            break
        await pilot.pause(0.01)
    app.dashboard.paint()
    await pilot.pause()


def live_app() -> tuple[DashboardApp, object]:
    """A dashboard on a live session the test drives through the bus it returns."""
    session = Session(title="pilot", sources=[idle])
    return DashboardApp(session), session.bus


def prompts(app) -> list[str]:
    return app.dashboard.query_one(AlertList).shown_prompts()


async def test_failure_appears_in_alerts_and_enter_opens_its_traceback():
    app, bus = live_app()
    async with app.run_test(size=(100, 30)) as pilot:
        bus.publish(ServerState(t_s=OOM.t_s - 60, state="running"))
        bus.publish(OOM.model_copy(update={"ranks": [3]}))
        await settle(pilot, 2)
        assert len(prompts(app)) == 1 and "oom" in prompts(app)[0] and "rank 3 " in prompts(app)[0]

        bus.publish(OOM.model_copy(update={"ranks": [5], "t_s": OOM.t_s + 1}))  # same alert_id: rank joins
        bus.publish(Alert(t_s=OOM.t_s + 2, alert_kind="assertion", message="AssertionError", ranks=[0, 1],
                          traceback="Traceback (most recent call last):\nAssertionError", alert_id=99))
        await settle(pilot, 4)
        shown = prompts(app)
        assert len(shown) == 2
        assert "assertion" in shown[0] and "rank 0,1" in shown[0]  # newest first
        assert "rank 3,5" in shown[1]

        await pilot.press("down", "enter")  # the OOM, by keyboard only
        assert isinstance(app.screen, AlertScreen)
        body = str(app.screen.query_one("#detail-body").render())
        assert "torch.OutOfMemoryError" in body and "cuda_graph_runner.py" in body and "3,5" in body
        await pilot.press("escape")
        assert not isinstance(app.screen, AlertScreen)


async def test_ledger_appears_with_trial_events_and_shows_the_selected_diff():
    expected = len(read_events(EVENTS))
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        ledger = app.dashboard.query_one(LedgerTable)
        await settle(pilot, expected)
        assert ledger.display and ledger.row_count == 5
        line = next(ledger.render_line(y).text for y in range(ledger.size.height)
                    if "flashinfer-ar-fusion" in ledger.render_line(y).text)
        assert " jit_arch " in line and line.rstrip().endswith("dead end")
        ledger.focus()
        await pilot.press("home", "down")  # the keyboard alone: row 2 is new-baseline
        assert ledger.row_at(ledger.highlighted).name == "new-baseline"
        await pilot.press("enter")
        assert isinstance(app.screen, TrialScreen)
        body = str(app.screen.query_one("#detail-body").render())
        assert re.search(r"cuda-graph-max-bs +512 +128", body) and "faster" in body


async def test_log_tail_filters_to_errors():
    expected = len(read_events(EVENTS))
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, expected)
        tail = app.dashboard.query_one(LogTail)
        assert "Decode batch" in str(tail.render())
        await pilot.press("e")
        text = str(tail.render())
        assert "Decode batch" not in text and "NCCL WARN" in text and "KV cache pool" in text
        await pilot.press("l")  # the whole log
        assert type(app.screen).__name__ == "LogScreen"


@pytest.mark.slow
async def test_the_whole_log_starts_over_after_a_replay_seek():
    session = Session(title="pilot", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.bus.publish(LogLine(t_s=100.0, line_no=1, text="before the seek"))
        await settle(pilot, 1)
        await pilot.press("l")
        screen = app.screen
        session.bus.publish(ReplaySeek(t_s=50.0, position_s=0.0))
        session.bus.publish(LogLine(t_s=50.0, line_no=1, text="after the seek"))
        await settle(pilot, 3)
        screen.append_new()
        await pilot.pause()
        shown = "\n".join(line.text for line in screen.query_one("#log-full").lines)
        assert "after the seek" in shown and "before the seek" not in shown


class RecordingControls:
    owns_server = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_bench(self) -> None:
        self.calls.append("pause")

    def resume_bench(self) -> None:
        self.calls.append("resume")

    def restart_trial(self) -> None:
        self.calls.append("restart")

    def stop_server(self) -> None:
        self.calls.append("stop")


@pytest.mark.slow
async def test_quit_asks_while_our_server_runs_then_stops_the_sources_and_the_server():
    stopped: list[str] = []
    source_cancelled = asyncio.Event()

    async def source(bus):
        bus.publish(ServerState(state="running"))
        try:
            await asyncio.Event().wait()
        finally:
            source_cancelled.set()

    async def on_stop():
        stopped.append("server")

    controls = RecordingControls()
    session = Session(title="live", sources=[source], controls=controls, on_stop=on_stop)
    app = DashboardApp(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, 1)
        await pilot.press("p", "r")
        assert isinstance(app.screen, ConfirmScreen)  # restarting a trial asks first
        await pilot.press("y")
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen) and not stopped
        await pilot.press("q", "y")
        for _ in range(100):
            if not app.is_running:
                break
            await pilot.pause(0.02)
    assert controls.calls == ["pause", "restart"]
    assert stopped == ["server"] and source_cancelled.is_set()
    assert app.return_code == 0


class RecordingReplay:
    def __init__(self) -> None:
        self.playing, self.speed, self.position_s, self.duration_s = True, 1.0, 100.0, 3600.0
        self.calls: list[tuple] = []

    def play(self) -> None:
        self.playing = True
        self.calls.append(("play",))

    def pause(self) -> None:
        self.playing = False
        self.calls.append(("pause",))

    def set_speed(self, speed: float) -> None:
        self.speed = speed
        self.calls.append(("speed", speed))

    def seek(self, position_s: float) -> None:
        self.position_s = position_s
        self.calls.append(("seek", position_s))

    def step(self) -> None:
        self.calls.append(("step",))

    def next_alert(self) -> None:
        self.calls.append(("next_alert",))


async def test_replay_keys_drive_the_replay_controls_and_the_timeline_follows():
    replay = RecordingReplay()
    session = Session(title="replay", sources=[idle], replay=replay)
    app = DashboardApp(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.bus.publish(LogLine(t_s=1.0, line_no=1, text="x"))
        await settle(pilot, 1)
        await pilot.press("plus", "plus", "minus", "right", "space", "right", "left", "n")
        assert replay.calls == [("speed", 2.0), ("speed", 4.0), ("speed", 2.0), ("seek", 110.0), ("pause",),
                                ("step",), ("seek", 100.0), ("next_alert",)]
        app.dashboard.paint()
        timeline = str(app.dashboard.query_one(TimelineBar).render())
        assert "x2" in timeline and "0:01:40 / 1:00:00" in timeline and "pause" in timeline
        for _ in range(8):
            await pilot.press("plus")
        assert replay.speed == 64.0


async def test_recording_from_the_tui_is_complete_after_quit(tmp_path):
    events = read_events(EVENTS)[:50]
    path = tmp_path / "run.jsonl"
    session = Session(title="rec", sources=[], record_path=path, header={"command": ["tuiapp", "demo"]})
    session.sources.append(_publish_all(events))
    app = DashboardApp(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, len(events))
        await pilot.press("q")  # no server of ours: no question asked
        for _ in range(200):
            if not app.is_running:
                break
            await pilot.pause(0.02)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1 + len(events) and b"tuiapp" in lines[0]
    assert path.stat().st_mode & 0o777 == 0o600


def _publish_all(events):
    async def source(bus):
        for event in events:
            bus.publish(event)
        await asyncio.Event().wait()

    return source


async def test_number_keys_hide_panels_and_the_palette_offers_the_same():
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        gpus = app.dashboard.query_one("#gpus")
        assert gpus.display
        await pilot.press("2")
        await pilot.pause()
        assert gpus.styles.display == "none"
        await pilot.press("2")
        await pilot.pause()
        assert gpus.styles.display == "block"
        titles = [c.title for c in app.get_system_commands(app.dashboard)]
        assert "Toggle panel: GPUs" in titles and "Open log" in titles and "Pause/resume benchmark loop" not in titles


async def test_failed_request_reason_and_alert_nodes_are_shown():
    from tuiapp.events import RequestDone
    from tuiapp.tui.widgets.perf_panels import ThroughputPanel

    app, bus = live_app()
    async with app.run_test(size=(120, 34)) as pilot:
        bus.publish(ServerState(t_s=OOM.t_s - 60, state="running"))
        bus.publish(RequestDone(t_s=OOM.t_s - 1, run_index=0, request_index=0, ok=False,
                                error="HTTP 422: Unexpected fields in the request: {'ignore_eos'}"))
        bus.publish(OOM.model_copy(update={"ranks": [0, 8], "nodes": ["node1", "node2"]}))
        await settle(pilot, 3)
        panel = str(app.dashboard.query_one(ThroughputPanel).render())
        assert "failed: HTTP 422: Unexpected fields" in panel
        assert "node1,node2" in prompts(app)[0]


def test_trial_details_read_as_a_table():
    """The shipped campaign's ep trial: its diff knob by knob, peak memory per GPU in GiB,
    its alerts as a list; no JSON left in the text."""
    from tuiapp.record.reading import read_recording
    from tuiapp.tui.screens.details import trial_text
    from tuiapp.tui.store import DashboardStore

    store = DashboardStore()
    for ev in read_recording(Path(__file__).resolve().parent.parent / "recordings" / "campaign.jsonl.gz").events:
        store.apply(ev)
    body = trial_text(store.trials["ep-flashinfer-a2a"], store).plain
    assert "{" not in body and '"' not in body
    assert re.search(r"^  ep-size +\(default\) +8$", body, re.M)
    assert re.search(r"^  moe-a2a-backend +\(default\) +flashinfer$", body, re.M)
    peaks = store.trials["ep-flashinfer-a2a"].result.row["peak_mem_bytes"]  # GPU index -> bytes
    assert len(peaks) == 8
    assert re.search(r"^  peak" + "".join(f" +{peaks[str(i)] / 2**30:.1f}" for i in range(8)) + "$", body, re.M)
    assert re.search(r"^  • \d:\d\d:\d\d  error assertion, ranks 2,3: AssertionError", body, re.M)
    new = trial_text(store.trials["new-baseline"], store).plain
    assert "verdict  faster: +7.51 tok/s (+9.2%) vs old-baseline" in new


@pytest.mark.slow
async def test_palette_screenshot_goes_to_the_current_directory_or_screenshot_dir(tmp_path, monkeypatch):
    """Textual's default, ~/Downloads, is missing on most servers (the save failed there)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    cwd, chosen = tmp_path / "cwd", tmp_path / "shots"
    cwd.mkdir()
    chosen.mkdir()
    monkeypatch.chdir(cwd)
    for screenshot_dir, where in ((None, cwd), (chosen, chosen)):
        app = DashboardApp(preview_session(EVENTS))
        app.screenshot_dir = screenshot_dir
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, len(read_events(EVENTS)))
            app.action_screenshot()  # what the palette's "Save screenshot" runs
            for _ in range(200):  # until Textual says it is saved (its thread reports back)
                if any("Saved screenshot" in str(n.message) for n in app._notifications):
                    break
                await pilot.pause(0.02)
        shots = list(where.glob("*.svg"))
        assert len(shots) == 1 and shots[0].read_text().startswith("<svg")


def test_screenshot_dir_must_exist(tmp_path, capsys):
    import pytest

    from tuiapp.cli import main

    with pytest.raises(SystemExit) as exit_:  # argparse's own usage error, as for every option
        main(["replay", "recordings/none.jsonl", "--screenshot-dir", str(tmp_path / "nope")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--screenshot-dir" in err and "no directory" in err and "Traceback" not in err


async def test_log_tail_hides_our_polling_requests_until_a_is_pressed():
    """uvicorn's access lines for our own pollers (server info every 2 s, metrics, health)
    are hidden; the benchmark's requests and the server's own lines stay."""
    session = Session(title="pilot", sources=[idle])
    app = DashboardApp(session)
    lines = [
        '[2026-12-01 20:17:50] INFO:     127.0.0.1:39906 - "GET /server_info HTTP/1.1" 200 OK',
        '[2026-12-01 20:17:50] INFO:     127.0.0.1:39918 - "GET /metrics HTTP/1.1" 200 OK',
        '[2026-12-01 20:17:48] INFO:     127.0.0.1:39882 - "GET /health HTTP/1.1" 503 Service Unavailable',
        '[2026-12-01 20:17:51] INFO:     127.0.0.1:39920 - "POST /generate HTTP/1.1" 200 OK',
        "[2026-12-01 20:17:51 TP0] Decode batch, #running-req: 1, #token: 43",
    ]
    async with app.run_test(size=(160, 48)) as pilot:
        for k, text in enumerate(lines):
            session.bus.publish(LogLine(t_s=1000.0 + k, line_no=k + 1, text=text))
        await settle(pilot, len(lines))
        tail = app.dashboard.query_one("#log", LogTail)  # one server, 80 columns: the log under the charts
        shown = str(tail.render())
        assert "POST /generate" in shown and "Decode batch" in shown
        assert "/server_info" not in shown and "/metrics" not in shown and "/health" not in shown
        assert "a: show polling" in tail.border_title
        await pilot.press("a")
        shown = str(tail.render())
        assert all(part in shown for part in ("/server_info", "/metrics", "/health", "POST /generate"))
