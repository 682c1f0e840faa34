import asyncio
import time
from pathlib import Path

from tuiapp.controls import ReplayControls
from tuiapp.events import Alert, GpuSample, Note, ReplaySeek, RunDone
from tuiapp.record.recorder import Recorder
from tuiapp.record.replay import ReplaySource

T0 = 1_000_000.0


class TimedBus:
    def __init__(self) -> None:
        self.events: list = []
        self.times: list[float] = []

    def publish(self, event) -> None:
        self.events.append(event)
        self.times.append(time.monotonic())

    def take(self) -> list:
        events, self.events, self.times = self.events, [], []
        return events


def _record(path: Path, events, start_t_s: float = T0) -> Path:
    with Recorder(path, {"start_t_s": start_t_s, "title": "test"}) as rec:
        for ev in events:
            rec.write(ev)
    return path


def _timeline() -> list:
    """100 s: a GPU sample a second, a note at 10 s, runs every 20 s, an alert at 50 s."""
    events = []
    for s in range(100):
        events.append(GpuSample(t_s=T0 + s, index=0, mem_used_bytes=s))
        if s == 10:
            events.append(Note(t_s=T0 + s, text="note"))
        if s and s % 20 == 0:
            events.append(RunDone(t_s=T0 + s, run_index=s // 20, requests=5, duration_s=20, decode_tok_s=89.0,
                                  output_tok_s=88.0))
        if s == 50:
            events.append(Alert(t_s=T0 + s, alert_kind="oom", message="out of memory", ranks=[1], alert_id=1))
    return events


async def _until(cond, timeout_s: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_timing_follows_the_recording_scaled_by_speed(tmp_path: Path) -> None:
    gaps_s = [0.0, 1.0, 3.0, 4.0, 8.0]
    path = _record(tmp_path / "r.jsonl", [Note(t_s=T0 + g, text=str(g)) for g in gaps_s])
    replay = ReplaySource(path, speed=32, stop_at_end=True)
    bus = TimedBus()
    start = time.monotonic()
    await asyncio.wait_for(replay.run(bus), 5)
    assert [e.text for e in bus.events] == [str(g) for g in gaps_s]
    offsets = [t - start for t in bus.times]
    for offset, g in zip(offsets, gaps_s, strict=True):
        assert offset >= g / 32 - 0.005  # never early
        assert offset < g / 32 + 0.5  # and not late by more than scheduling noise
    assert replay.position_s == replay.duration_s == 8.0 and not replay.playing


async def test_speed_change_mid_play_and_clamping(tmp_path: Path) -> None:
    path = _record(tmp_path / "r.jsonl", [Note(t_s=T0 + g, text=str(g)) for g in (0.0, 64.0)])
    replay = ReplaySource(path, speed=1)
    replay.set_speed(500)
    assert replay.speed == 64
    replay.set_speed(0.1)
    assert replay.speed == 1
    replay.set_speed(64)
    bus = TimedBus()
    task = asyncio.create_task(replay.run(bus))
    start = time.monotonic()
    await _until(lambda: len(bus.events) == 2)
    assert time.monotonic() - start >= 0.95  # 64 s at x64: paced, not at once
    task.cancel()


async def test_controls_protocol_step_seek_and_next_alert(tmp_path: Path) -> None:
    path = _record(tmp_path / "r.jsonl", _timeline())
    replay = ReplaySource(path, history_s=5)
    assert isinstance(replay, ReplayControls)
    assert replay.duration_s == 99.0
    replay.pause()
    bus = TimedBus()
    task = asyncio.create_task(replay.run(bus))
    await asyncio.sleep(0.05)
    assert bus.events == [] and replay.position_s == 0.0

    replay.step()
    replay.step()
    await _until(lambda: len(bus.events) == 2)
    assert [e.mem_used_bytes for e in bus.take()] == [0, 1] and replay.position_s == 1.0

    # a jump beyond the history window: reset marker, every sparse event, recent dense ones
    replay.seek(60.0)
    await _until(lambda: any(isinstance(e, RunDone) and e.run_index == 3 for e in bus.events))
    got = bus.take()
    assert isinstance(got[0], ReplaySeek) and got[0].position_s == 60.0
    assert [e.run_index for e in got if isinstance(e, RunDone)] == [1, 2, 3]
    assert sum(isinstance(e, Alert) for e in got) == 1 and sum(isinstance(e, Note) for e in got) == 1
    assert sorted(e.mem_used_bytes for e in got if isinstance(e, GpuSample)) == [55, 56, 57, 58, 59, 60]
    assert replay.position_s == 60.0

    # a short jump forward just plays the events in between
    replay.seek(63.0)
    await _until(lambda: len(bus.events) == 3)
    assert [e.mem_used_bytes for e in bus.take()] == [61, 62, 63]

    # backwards rebuilds the state at the target
    replay.seek(10.0)
    await _until(lambda: any(isinstance(e, Note) for e in bus.events))
    got = bus.take()
    assert isinstance(got[0], ReplaySeek)
    assert not any(isinstance(e, (RunDone, Alert)) for e in got)
    assert max(e.mem_used_bytes for e in got if isinstance(e, GpuSample)) == 10

    replay.play()
    replay.next_alert()
    await _until(lambda: any(isinstance(e, Alert) for e in bus.events))
    await asyncio.sleep(0.05)
    got = bus.take()
    assert not replay.playing and replay.position_s == 50.0
    assert max(e.mem_used_bytes for e in got if isinstance(e, GpuSample)) == 50
    replay.next_alert()  # no alert after this one: nothing happens
    await asyncio.sleep(0.05)
    assert replay.position_s == 50.0 and bus.take() == []
    task.cancel()



async def test_a_seek_right_after_next_alert_wins_and_drops_the_alert(tmp_path: Path) -> None:
    path = _record(tmp_path / "r.jsonl", _timeline())
    replay = ReplaySource(path, history_s=5)
    replay.pause()
    replay.next_alert()
    replay.seek(20.0)  # before run() applied the jump to the alert: this seek replaces it
    bus = TimedBus()
    task = asyncio.create_task(replay.run(bus))
    await _until(lambda: any(isinstance(e, RunDone) for e in bus.events))
    await asyncio.sleep(0.05)
    got = bus.take()
    assert not any(isinstance(e, Alert) for e in got)
    assert max(e.mem_used_bytes for e in got if isinstance(e, GpuSample)) == 20
    task.cancel()

async def test_play_at_the_end_pauses_and_play_again_restarts(tmp_path: Path) -> None:
    path = _record(tmp_path / "r.jsonl", [Note(t_s=T0 + g, text=str(g)) for g in (0.0, 2.0)])
    replay = ReplaySource(path, speed=64)
    bus = TimedBus()
    task = asyncio.create_task(replay.run(bus))
    await _until(lambda: len(bus.events) == 2 and not replay.playing)
    assert replay.position_s == 2.0
    replay.play()
    await _until(lambda: sum(isinstance(e, Note) for e in bus.events) == 4)
    assert isinstance(bus.events[2], ReplaySeek)  # starting over clears what consumers show
    assert [e.text for e in bus.events if isinstance(e, Note)] == ["0.0", "2.0", "0.0", "2.0"]
    task.cancel()


async def test_follow_picks_up_appended_lines(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = Recorder(path, flush_interval_s=0.05)
    writer.open()
    for i in range(3):
        writer.write(Note(t_s=time.time(), text=f"old{i}"))
    writer.flush()
    replay = ReplaySource(path, follow=True, poll_s=0.05)
    bus = TimedBus()
    task = asyncio.create_task(replay.run(bus))
    await _until(lambda: len(bus.events) == 3)
    writer.write(Note(t_s=time.time(), text="new0"))
    writer.write(GpuSample(t_s=time.time(), index=2))
    await _until(lambda: len(bus.events) == 5)  # the writer's own flush thread put them on disk
    assert [getattr(e, "text", None) for e in bus.events] == ["old0", "old1", "old2", "new0", None]
    assert replay.duration_s > 0 and replay.skipped_lines == 0
    writer.close()
    task.cancel()


async def test_corrupt_lines_are_skipped_during_replay(tmp_path: Path) -> None:
    path = _record(tmp_path / "r.jsonl", [Note(t_s=T0 + g, text=str(g)) for g in (0.0, 1.0)])
    with open(path, "ab") as f:
        f.write(b'{"t_s":1000002.0,"kind":"gpu"}\ngarbage\n{"t_s":1000003.0,"kind":"note","text":"3.0"}\n{"t_s":10')
    replay = ReplaySource(path, speed=64, stop_at_end=True)
    bus = TimedBus()
    await asyncio.wait_for(replay.run(bus), 5)
    assert [e.text for e in bus.events] == ["0.0", "1.0", "3.0"]
    assert replay.skipped_lines == 3


def test_replay_command_wires_a_session_for_the_tui(tmp_path: Path, monkeypatch) -> None:
    from tuiapp.bus import EventBus
    from tuiapp.cli import main
    from tuiapp.commands import frontend

    path = _record(tmp_path / "r.jsonl", [Note(t_s=T0 + g, text=str(g)) for g in (0.0, 1.0)])
    seen = {}

    def fake_run(session, *, headless, theme=None, screenshot_dir=None):  # stands in for the Textual app only
        seen.update(headless=headless, theme=theme, session=session, screenshot_dir=screenshot_dir)
        bus = EventBus()
        sub = bus.subscribe("tui")

        async def drive():
            task = asyncio.create_task(session.sources[0](bus))
            await _until(lambda: len(sub) == 2)
            task.cancel()

        asyncio.run(drive())
        seen["events"] = [e.text for e in sub.drain()]
        return 0

    monkeypatch.setattr(frontend, "run", fake_run)
    assert main(["replay", str(path), "--speed", "64", "--theme", "nv-light"]) == 0
    assert seen["headless"] is False and seen["theme"] == "nv-light"
    replay = seen["session"].replay
    assert isinstance(replay, ReplayControls) and replay.speed == 64 and replay.duration_s == 1.0
    assert seen["session"].title == "replay: test"
    assert seen["events"] == ["0.0", "1.0"]
