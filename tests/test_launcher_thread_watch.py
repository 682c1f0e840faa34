"""A launched server's log watcher on the output thread: the relay, the clock grid, quiet polls there."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import threading
import time

from tuiapp.common.ticks import next_tick_s, until_tick_s
from tuiapp.events import Alert, LogLine, Note, ServerStats
from tuiapp.logwatch.relay import LoopRelay
from tuiapp.logwatch.watcher import LogWatcher
from tuiapp.server.launcher import ServerProcess
from tuiapp.server.output import READY_LINE
from tuiapp.server.ports import free_port


def test_ticks_are_multiples_of_the_period_and_never_the_one_just_due() -> None:
    assert next_tick_s(10.3, 1.0) == 11.0
    assert next_tick_s(10.3, 0.25) == 10.5
    assert next_tick_s(11.0, 1.0) == 12.0  # due now: the next one
    assert next_tick_s(11.0 - 1e-10, 1.0) == 12.0  # a timer that fired a hair early
    # a 4 Hz task meets a 1 Hz one on each whole second
    assert next_tick_s(41.8, 0.25) == next_tick_s(41.8, 1.0) == 42.0


def _line(text: str) -> LogLine:
    return LogLine.model_construct(t_s=time.time(), text=text, source="server", line_no=1)


def _urgent(event) -> bool:
    return not isinstance(event, (LogLine, ServerStats))


async def test_relay_urgent_at_once_lazy_on_its_tick_in_order() -> None:
    got: list = []
    relay = LoopRelay(got.append, _urgent, lazy_s=0.4)
    await asyncio.sleep(until_tick_s(0.4) + 0.02)  # just after a tick: the next is ~0.38 s away
    t = threading.Thread(target=relay.put, args=(_line("one"),))
    t.start()
    t.join()
    await asyncio.sleep(0.1)
    assert got == []  # a log line does not wake the loop
    await asyncio.sleep(0.4)
    assert [e.text for e in got] == ["one"]  # ... the tick brings it
    note = Note(text="urgent")
    for ev in (_line("two"), note):
        t = threading.Thread(target=relay.put, args=(ev,))
        t.start()
        t.join()
    await asyncio.sleep(0.05)  # well before the next tick
    assert [getattr(e, "text", None) for e in got] == ["one", "two", "urgent"]  # order kept
    relay.put(_line("last"))
    relay.close()
    assert got[-1].text == "last"
    relay.put(_line("after close"))  # at once now: nothing would tick
    await asyncio.sleep(0.01)
    assert got[-1].text == "after close"


SERVER = textwrap.dedent(f"""
    import sys, time
    def log(text, prefix=""):
        sys.stdout.write("[2026-01-01 12:00:00" + prefix + "] " + text + "\\n"); sys.stdout.flush()
    log({READY_LINE.decode()!r})
    time.sleep(0.3)
    log("Scheduler hit an exception: Traceback (most recent call last):\\n"
        '  File "/sglang/srt/managers/scheduler.py", line 6370, in run_scheduler_process\\n'
        "    scheduler.event_loop_overlap()\\n"
        "AssertionError: rank failure", prefix=" TP1")
    time.sleep(30)
""")


class ThreadRecordingWatcher(LogWatcher):
    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.poll_threads: set[int] = set()

    def poll(self, now_s: float | None = None) -> None:
        self.poll_threads.add(threading.get_ident())
        super().poll(now_s)


async def test_launched_server_alert_comes_from_the_output_thread_without_a_loop_poller(tmp_path) -> None:
    got: list = []
    relay = LoopRelay(got.append, _urgent, lazy_s=5.0)  # log lines would wait 5 s: alerts must not
    watcher = ThreadRecordingWatcher(relay.put, ready_events=False)
    port = free_port()
    server = ServerProcess([sys.executable, "-c", SERVER, "--port", str(port)], publish=lambda _e: None,
                           log_path=tmp_path / "server.log", health_url=f"http://127.0.0.1:{port}",
                           output_consumer=watcher)
    await server.start()
    try:
        assert await asyncio.wait_for(server.wait_ready(), 20)
        t0 = time.monotonic()
        while not any(isinstance(e, Alert) for e in got):
            assert time.monotonic() - t0 < 5, "no alert reached the loop"
            await asyncio.sleep(0.01)
        alert = next(e for e in got if isinstance(e, Alert))
        assert alert.alert_kind == "assertion" and 1 in alert.ranks
        # the record was finished at its quiet deadline by the output thread, not the loop
        assert watcher.poll_threads and threading.get_ident() not in watcher.poll_threads
        # the traceback's lines rode along with the alert, before it
        texts = [e.text for e in got if isinstance(e, LogLine)]
        assert any("AssertionError: rank failure" in t for t in texts)
    finally:
        await server.stop(sigint_timeout_s=2)
        relay.close()


DECODE = (b"[2026-12-03 08:02:22 TP0] Decode batch, #running-req: 1, #token: 47, token usage: 0.00, "
          b"cuda graph: True, gen throughput (token/s): 78.43, #queue-req: 0\n")


def test_a_statistics_line_is_not_worth_a_quiet_wakeup_of_its_own() -> None:
    from tuiapp.logwatch.watcher import IDLE_S, UNALARMING_WAIT_S

    events: list = []
    watcher = LogWatcher(events.append, ready_events=False)
    watcher.feed(DECODE)
    assert UNALARMING_WAIT_S - 0.1 < watcher.quiet_in_s() <= UNALARMING_WAIT_S
    watcher.feed(b"[2026-12-03 08:02:22 TP0] Load weight begin. avail mem=20.90 GB\n")
    assert watcher.quiet_in_s() <= IDLE_S  # an ordinary line may start a failure: polled on time
    assert [e.text for e in events if isinstance(e, LogLine)] == [DECODE.decode().rstrip("\n")]


def test_records_after_a_late_statistics_line_are_those_of_a_poll_on_time() -> None:
    """An unprefixed line more than IDLE_S after a Decode line is a record of its own, as when
    the Decode line was finished at IDLE_S; never swallowed into the statistics record, which
    is not classified."""
    events: list = []
    watcher = LogWatcher(events.append, ready_events=False)
    watcher.feed(DECODE)
    watcher.quiet_in_s()  # the output thread drives it by the clock
    time.sleep(0.08)
    watcher.feed(b"CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 95.6 GiB\n")
    watcher.flush()
    lines = [e.text for e in events if isinstance(e, LogLine)]
    assert lines[0] == DECODE.decode().rstrip("\n")
    assert lines[1].startswith("CUDA out of memory")  # its own record, classified as such
