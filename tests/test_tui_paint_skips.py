"""The dashboard refreshes a panel only when what it shows changed, and bounds how often."""

from __future__ import annotations

import time

import pytest
from session_helpers import idle  # tests/ is on the path

from tuiapp.events import GpuSample, RequestDone, ServerInfo, ServerStats
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.gpu_table import GpuTable
from tuiapp.tui.widgets.perf_panels import AcceptancePanel, ThroughputPanel


@pytest.fixture
async def pilot():
    app = DashboardApp(Session(title="paint", sources=[idle]))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        yield pilot


def _count_refreshes(widget) -> list[int]:
    calls = [0]
    original = widget.refresh

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    widget.refresh = counting
    return calls


async def test_a_bump_that_changes_no_text_does_not_refresh(pilot):
    app = pilot.app
    panel = app.dashboard.query_one(AcceptancePanel)
    panel.paint(force=True)
    calls = _count_refreshes(panel)
    info = ServerInfo(url="http://127.0.0.1:30000", version="0.5.23")  # no speculation
    app.store.apply(info)
    panel._painted_s = 0.0
    panel.paint()
    assert calls[0] == 1  # "speculation off" replaces the empty figures
    app.store.apply(info)  # the same server info again: the version moves, the text does not
    panel._painted_s = 0.0
    panel.paint()
    assert calls[0] == 1
    assert panel.painted_version == app.store.versions["acceptance"]


async def test_a_changed_figure_refreshes_within_its_interval(pilot):
    app = pilot.app
    panel = app.dashboard.query_one(ThroughputPanel)
    panel.paint(force=True)
    calls = _count_refreshes(panel)
    app.store.apply(RequestDone(run_index=0, request_index=0))  # the figure is this session's
    app.store.apply(ServerStats(source="metrics", gen_throughput_tok_s=88.0))
    panel.paint()
    assert calls[0] == 0  # painted (forced) a moment ago: held back
    panel._painted_s = time.monotonic() - panel.min_interval_s
    panel.paint()
    assert calls[0] == 1
    assert panel.min_interval_s <= 1.0  # tok/s is never shown more than ~1 s late


async def test_gpu_table_repaints_at_most_every_interval(pilot):
    app = pilot.app
    table = app.dashboard.query_one(GpuTable)
    table.paint(force=True)
    calls = _count_refreshes(table)
    for i in range(4):  # four sampler ticks in quick succession (the demo samples at 4 Hz)
        app.store.apply(GpuSample(index=0, mem_used_bytes=i << 30, mem_total_bytes=96 << 30))
        table.paint()
    held = calls[0]
    assert held <= 1  # the first sample grows the table (one layout); none repaints it
    table._painted_s = time.monotonic() - table.min_interval_s
    table.paint()
    assert calls[0] == held + 1 and table.painted_version == app.store.versions["gpus"]
    before = calls[0]
    table.paint()  # nothing new, and the subtitle (host line) did not change
    assert calls[0] == before


async def test_a_changed_panel_is_rendered_once_per_paint(pilot):
    """paint() builds the text to compare; Textual's render for that refresh reuses it."""
    app = pilot.app
    panel = app.dashboard.query_one(ThroughputPanel)
    panel.paint(force=True)
    await pilot.pause()
    builds = [0]
    inner = type(panel).render.__wrapped__

    def counting(self):
        builds[0] += 1
        return inner(self)

    type(panel).render.__wrapped__ = counting  # the wrapper calls whatever it wraps
    try:
        app.store.apply(RequestDone(run_index=0, request_index=0))  # the figure is this session's
        app.store.apply(ServerStats(source="metrics", gen_throughput_tok_s=77.0))
        panel._painted_s = 0.0
        panel.paint()
        await pilot.pause()
        await pilot.pause()
    finally:
        type(panel).render.__wrapped__ = inner
    assert builds[0] == 1
    assert "77" in str(panel.render())  # and the screen got the new figure
