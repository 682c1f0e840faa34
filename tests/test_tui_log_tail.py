"""The log tail keeps each line's text between renders: what it shows must be what a tail
built from scratch shows, after new lines, a filter toggle and a theme change."""

import pytest
from session_helpers import idle  # tests/ is on the path

from tuiapp.events import LogLine
from tuiapp.session import Session
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.log_tail import LogTail, log_line_text


def line(n: int) -> LogLine:
    if n % 3 == 0:  # our own polling, hidden by default
        text = f'INFO:     127.0.0.1:{40000 + n} - "GET /metrics HTTP/1.1" 200 OK'
        return LogLine(t_s=100.0 + n, line_no=n, text=text, level="info")
    level = "error" if n % 7 == 0 else "info"
    return LogLine(t_s=100.0 + n, line_no=n, text=f"line {n}", level=level)


def fresh(tail: LogTail) -> str:
    """The tail's lines built now, without anything kept: the expected text."""
    hide, errors_only = tail.hide_polling, tail.errors_only
    picked = [ln for ln in tail.store.log
              if (not errors_only or ln.level != "info") and not (hide and '"GET /metrics' in ln.text)]
    tones = tail.tones()
    return "\n".join(log_line_text(ln, tail.store.rel_s(ln.t_s), tones).markup
                     for ln in picked[-max(1, tail.size.height):])


@pytest.mark.slow
async def test_kept_lines_render_like_fresh_ones():
    session = Session(title="log", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=(160, 48)) as pilot:
        tail = app.dashboard.query_one("#log", LogTail)  # one server: the log under the charts
        n = 0

        async def add(count: int) -> None:
            nonlocal n
            for _ in range(count):
                session.bus.publish(line(n))
                n += 1
            for _ in range(200):
                if app.store.applied >= n and not len(app.events):
                    break
                await pilot.pause(0.01)
            tail._painted_s = float("-inf")
            app.dashboard.paint()
            await pilot.pause()

        def shown() -> str:
            return "\n".join(t.markup for t in tail.render().split("\n"))

        await add(60)
        assert shown() == fresh(tail) and "line 59" in shown() and "GET /metrics" not in shown()
        await add(5)
        assert shown() == fresh(tail) and "line 64" in shown()
        tail.hide_polling = False
        await pilot.pause()
        assert shown() == fresh(tail) and "GET /metrics" in shown()
        tail.errors_only = True
        await pilot.pause()
        assert shown() == fresh(tail) and "line 56" in shown() and "line 64" not in shown()  # 56: an error
        tail.errors_only = False
        before = tail.tones()
        await pilot.press("t")  # the next theme: new colours, so no kept text may be reused
        await pilot.pause()
        assert tail.tones() != before
        assert shown() == fresh(tail)
