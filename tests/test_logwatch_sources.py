"""Log sources for attach: --log FILE and --log-cmd CMD, labelled nodes, one incident across nodes."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tuiapp.events import Alert, Note
from tuiapp.logwatch.sources import (
    LogSource,
    LogSourceError,
    follow_command,
    label_sources,
    log_source_tasks,
    parse_source,
)

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
    def notes(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Note)]


async def wait_for(cond, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_parse_labels() -> None:
    assert parse_source("file", "/var/log/s.log") == LogSource("file", "/var/log/s.log")
    assert parse_source("file", "node1=/var/log/s.log") == LogSource("file", "/var/log/s.log", "node1")
    assert parse_source("cmd", "n1=ssh n1 tail -F /x") == LogSource("cmd", "ssh n1 tail -F /x", "n1")
    assert parse_source("cmd", "docker logs -f a=b") == LogSource("cmd", "docker logs -f a=b")
    with pytest.raises(LogSourceError):
        parse_source("cmd", "  ")
    two = label_sources([LogSource("file", "/a"), LogSource("cmd", "tail -F /b", "gpu2")])
    assert [s.node for s in two] == ["log1", "gpu2"]
    with pytest.raises(LogSourceError, match="labelled 'x'"):
        label_sources([LogSource("file", "/a", "x"), LogSource("file", "/b", "x")])


def test_file_named_with_equals_sign_is_a_path(tmp_path: Path) -> None:
    odd = tmp_path / "run=3.log"
    odd.write_text("")
    assert parse_source("file", str(odd)) == LogSource("file", str(odd))


async def test_file_source_appended_truncated_rotated_missing(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    sink = Sink()
    stop = asyncio.Event()
    (task,) = log_source_tasks([LogSource("file", str(path))], sink, stop)
    running = asyncio.create_task(task())
    await wait_for(lambda: any("no such file yet" in n for n in sink.notes))
    path.write_bytes(tb(0, "KeyError: 'created late'"))  # missing at first: read from its start
    await wait_for(lambda: len(sink.alerts) == 1)
    append(path, tb(1, "AssertionError: appended"))
    await wait_for(lambda: len(sink.alerts) == 2)
    with open(path, "r+b") as f:  # copytruncate
        f.truncate(0)
    await asyncio.sleep(0.1)
    append(path, tb(2, "torch.OutOfMemoryError: CUDA out of memory. after truncate"))
    await wait_for(lambda: len(sink.alerts) == 3)
    os.rename(path, tmp_path / "server.log.1")  # rotation
    path.write_bytes(tb(3, "RuntimeError: NCCL error: after rotate"))
    await wait_for(lambda: len(sink.alerts) == 4)
    stop.set()
    await asyncio.wait_for(running, 3)
    assert [(a.alert_kind, a.ranks, a.nodes) for a in sink.alerts] == [
        ("keyerror", [0], []), ("assertion", [1], []), ("oom", [2], []), ("nccl", [3], [])]


async def test_file_source_from_end_by_default_and_from_start(tmp_path: Path) -> None:
    for from_start, expected in ((False, ["assertion"]), (True, ["keyerror", "assertion"])):
        path = tmp_path / f"old-{from_start}.log"
        path.write_bytes(tb(0, "KeyError: 'history'"))
        sink = Sink()
        stop = asyncio.Event()
        (task,) = log_source_tasks([LogSource("file", str(path))], sink, stop, from_start=from_start)
        running = asyncio.create_task(task())
        await asyncio.sleep(0.15)
        append(path, tb(5, f"AssertionError: new {from_start}"))
        await wait_for(lambda s=sink, n=len(expected): len(s.alerts) == n)
        stop.set()
        await asyncio.wait_for(running, 3)
        assert [a.alert_kind for a in sink.alerts] == expected


async def test_command_that_exits_is_restarted_and_its_stderr_is_a_note(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    script = tmp_path / "fake_logs.py"
    script.write_text(
        "import sys, pathlib\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\n"
        f"sys.stdout.buffer.write({tb(0, 'KeyError: START')!r}.replace(b'START', b\"'run-%c'\" % (96 + n)))\n"
        "sys.stdout.flush()\n"
        "print('connection to node1 lost', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    sink = Sink()
    stop = asyncio.Event()
    task = asyncio.create_task(follow_command(f"{sys.executable} {script}", sink, stop=stop,
                                              backoff_s=(0.05, 0.1)))
    await wait_for(lambda: len(sink.alerts) >= 3)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert [a.message for a in sink.alerts[:3]] == ["KeyError: 'run-a'", "KeyError: 'run-b'", "KeyError: 'run-c'"]
    assert all(a.first_line == 1 for a in sink.alerts)  # a new start counts lines from 1
    assert any("stderr: connection to node1 lost" in n for n in sink.notes)
    assert any("exited with code 3; restarting in 0.05 s" in n for n in sink.notes)
    assert any("restarting in 0.1 s" in n for n in sink.notes)  # backoff grows


async def test_stop_ends_a_command_that_never_exits(tmp_path: Path) -> None:
    path = tmp_path / "live.log"
    path.write_bytes(b"")
    sink = Sink()
    stop = asyncio.Event()
    task = asyncio.create_task(follow_command(f"tail -n0 -F {path}", sink, stop=stop))
    await asyncio.sleep(0.3)
    append(path, tb(4, "AssertionError: via tail"))
    await wait_for(lambda: len(sink.alerts) == 1)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert sink.alerts[0].ranks == [4]
    assert not any("exited" in n for n in sink.notes)


async def test_two_labelled_sources_make_one_incident_of_one_failure(tmp_path: Path) -> None:
    n1, n2 = tmp_path / "n1.log", tmp_path / "n2.log"
    n1.write_bytes(b"")
    n2.write_bytes(b"")
    sink = Sink()
    stop = asyncio.Event()
    sources = [LogSource("file", str(n1), "node1"), LogSource("cmd", f"tail -n0 -F {n2}", "node2")]
    tasks = [asyncio.create_task(t()) for t in log_source_tasks(sources, sink, stop)]
    await asyncio.sleep(0.3)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {g} has 1.{g} GiB free"
    append(n1, tb(0, oom.format(g=0)) + tb(1, oom.format(g=1)))
    append(n2, tb(8, oom.format(g=0)))
    await wait_for(lambda: any(a.nodes == ["node1", "node2"] for a in sink.alerts))
    append(n2, tb(9, "KeyError: 'only node2'"))
    await wait_for(lambda: len(sink.alerts) == 2)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    joint, other = sink.alerts
    assert (joint.alert_kind, joint.nodes) == ("oom", ["node1", "node2"])
    assert joint.ranks == [0, 1, 8]
    assert (other.alert_kind, other.nodes, other.ranks) == ("keyerror", ["node2"], [9])


def test_a_crash_points_at_the_joint_incident_its_cause_joined():
    from tuiapp.logwatch.nodes import NodeMerger

    seen: list[Alert] = []
    merger = NodeMerger(seen.append)
    a, b = merger.publisher("node1"), merger.publisher("node2")
    a(Alert(t_s=1.0, alert_kind="nccl", severity="error", message="Watchdog caught collective timeout", alert_id=101))
    b(Alert(t_s=1.5, alert_kind="nccl", severity="error", message="Watchdog caught collective timeout", alert_id=202))
    b(Alert(t_s=2.0, alert_kind="crash", severity="error", message="Received sigquit", alert_id=203, caused_by=202))
    assert [(e.alert_id, e.nodes) for e in seen[:2]] == [(101, ["node1"]), (101, ["node1", "node2"])]
    assert seen[2].alert_id == 203 and seen[2].caused_by == 101
