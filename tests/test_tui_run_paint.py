"""A run's figures reach the screen as the run lands, not at the next frame (up to FRAME_S
away): measured on the real pipeline, a run's tok/s was up to ~1.0 s old before."""

from __future__ import annotations

import asyncio
import time

from session_helpers import idle  # tests/ is on the path

from tuiapp.events import BenchSummary, RequestDone, RunDone, ServerStats
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.screens.dashboard import FRAME_S
from tuiapp.tui.widgets.perf_panels import ThroughputPanel


def _screen_text(panel) -> str:
    """The panel's lines as Textual renders them for the screen."""
    return "\n".join("".join(seg.text for seg in panel.render_line(y)) for y in range(panel.size.height))


async def test_a_run_shows_at_once_right_after_a_frame():
    app = DashboardApp(Session(title="run", sources=[idle]))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bus, dashboard = app.session.bus, app.dashboard
        panel = dashboard.query_one(ThroughputPanel)
        # a request of this session came back: the server's figure is this session's
        bus.publish(RequestDone(run_index=0, request_index=0))
        bus.publish(ServerStats(source="metrics", gen_throughput_tok_s=88.0))  # dense: waits for a frame
        panel._painted_s = float("-inf")  # mounted a moment ago: not held back by its interval
        dashboard._frame()  # a frame paints it: the next one is FRAME_S away, the panel's own
        # next paint min_interval_s away unless it is urgent
        await pilot.pause()
        assert "server 88 tok/s" in _screen_text(panel)
        frame_s = dashboard._frame_s

        t0 = time.monotonic()
        # as the benchmark loop publishes them: the last request (a dense kind, so it is what
        # wakes the dashboard, with the rest behind it), the run, the summary, back to back
        bus.publish(RequestDone(run_index=0, request_index=0, completion_tokens=256, ttft_s=0.06, e2e_s=2.9,
                                decode_tok_s=77.7))
        bus.publish(RunDone(run_index=0, requests=1, duration_s=2.9, decode_tok_s=77.7, output_tok_s=75.0))
        bus.publish(BenchSummary(runs=1, mean_decode_tok_s=77.7, sd_decode_tok_s=None))
        while "n=1" not in _screen_text(panel) and time.monotonic() - t0 < 10 * FRAME_S:  # hang guard
            await asyncio.sleep(0.01)
        shown_s = time.monotonic() - t0
        text = _screen_text(panel)
        assert "n=1" in text and "run 77.7" in text and "req 77.7" in text
        # shown by the run's own paint: no frame ran meanwhile (a wall-clock bound would flake on
        # a loaded box; the frame's own stamp says whether one ran)
        assert dashboard._frame_s == frame_s, f"shown only by a frame, {shown_s:.2f} s later"
