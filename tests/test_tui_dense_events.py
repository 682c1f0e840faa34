"""Dense events (GPU samples, log lines, requests, server figures) wait for the dashboard's next
frame instead of waking its reader per burst; they are on screen by that frame, no later than
one frame interval after the previous one. An alert still wakes the reader at once."""

import asyncio
import time

import pytest
from session_helpers import idle  # tests/ is on the path

from tuiapp.events import Alert, GpuSample, RequestDone
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens import dashboard


@pytest.mark.slow
async def test_dense_events_ride_the_next_frame_and_alerts_come_at_once(monkeypatch):
    monkeypatch.setattr(dashboard, "FRAME_S", 0.4)
    session = Session(title="dense", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.dashboard
        store, bus = app.store, session.bus
        frames: list[float] = []
        real_frame = screen._frame

        def frame() -> None:
            frames.append(time.monotonic())
            real_frame()

        monkeypatch.setattr(screen, "_frame", frame)
        await pilot.pause(0.5)  # a quiet spell: the next event paints at once (COALESCE_S later)
        bus.publish(RequestDone(run_index=0, request_index=0, completion_tokens=256, decode_tok_s=88.0))
        deadline = time.monotonic() + 2.0
        while not frames:
            assert time.monotonic() < deadline, "no frame after the first event"
            await asyncio.sleep(0.005)
        last_frame_s = frames[-1]
        applied = store.applied
        for i in range(8):  # a sampler's burst, just after a frame
            bus.publish(GpuSample(index=i, mem_used_bytes=(i + 1) << 30, mem_total_bytes=80 << 30))
        bus.publish(RequestDone(run_index=0, request_index=1, completion_tokens=256, decode_tok_s=89.0))
        await asyncio.sleep(0.15)
        assert store.applied == applied and len(app.events) == 9, "dense events woke the dashboard's reader"
        while store.applied < applied + 9:
            assert time.monotonic() < deadline, "the samples never reached the store"
            await asyncio.sleep(0.005)
        taken_s = time.monotonic()
        # taken just before the next frame, which paints them one frame interval after the last
        assert taken_s >= last_frame_s + dashboard.FRAME_S - dashboard.COALESCE_S - 0.02
        while len(frames) < 2:
            await asyncio.sleep(0.005)
        assert len(frames) == 2  # the one frame after the burst took it (no bound on wall time:
        # a loaded box delays timers; the lower bound above shows it waited for that frame)
        assert store.gpus[7].mem_used_bytes == 8 << 30

        applied = store.applied
        frames_before = len(frames)
        t0 = time.monotonic()
        bus.publish(Alert(alert_kind="oom", severity="error", message="CUDA out of memory", ranks=[0]))
        while store.applied == applied:
            assert time.monotonic() - t0 < 30, "the alert never reached the store"  # hang guard
            await asyncio.sleep(0.005)
        assert len(frames) == frames_before, "an alert waited for a frame"
        await asyncio.sleep(0)
        assert screen._alerts.painted_version[0] == store.versions["alerts"]  # painted as it came
