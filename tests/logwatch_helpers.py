"""What the log-watcher tests share: a sink that keeps what it is given, a scheduler traceback."""

from __future__ import annotations

from tuiapp.events import Alert, LogLine, Note

TS = "2026-01-01 12:00:00"


def tb(rank: int, final: str) -> bytes:
    return (f"[{TS} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sglang/srt/managers/scheduler.py", line 6367, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            f"{final}\n").encode()


class Sink:
    def __init__(self) -> None:
        self.events: list = []

    def __call__(self, e: object) -> None:
        self.events.append(e)

    @property
    def alerts(self) -> list[Alert]:
        return list({e.alert_id: e for e in self.events if isinstance(e, Alert)}.values())

    @property
    def lines(self) -> list[LogLine]:
        return [e for e in self.events if isinstance(e, LogLine)]

    @property
    def notes(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Note)]


def scan_text(text: str) -> list[dict]:
    """The incidents a watcher finds in ``text`` read at once, as logscan's summary lists them."""
    from tuiapp.logwatch.watcher import LogWatcher

    sink = Sink()
    w = LogWatcher(sink, log_lines=False)
    w.feed(text.encode(), now_s=0.0)
    w.flush(now_s=0.0)
    return w.summary()["incidents"]
