"""Robust input: bad bytes, huge lines, progress bars, bursts, truncation, rotation, pipes."""

from __future__ import annotations

import asyncio
import os
import random
import sys
from pathlib import Path

from logwatch_helpers import TS, Sink, tb  # tests/ is on the path

from tuiapp.bus import EventBus
from tuiapp.events import Alert
from tuiapp.logwatch.follow import follow_file
from tuiapp.logwatch.lines import MAX_LINE_BYTES, TAIL_BYTES
from tuiapp.logwatch.watcher import LogWatcher


def test_non_utf8_bytes_are_replaced_not_fatal() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    w.feed(b"[" + TS.encode() + b" TP0] caf\xe9 \xff\xfe latin-1 text\n")
    w.feed(tb(1, "AssertionError: bad \xc3\x28 byte".encode("latin-1").decode("latin-1")))
    w.feed(b"\x80\x81\x82 raw garbage line\n")
    w.flush()
    assert "\ufffd" in sink.lines[0].text
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == [("assertion", [1])]


def test_impossible_timestamp_is_not_fatal() -> None:
    # a garbled date (month 13, year 0) used to raise from calendar.timegm inside feed()
    sink = Sink()
    w = LogWatcher(sink)
    w.feed(b"[2026-13-01 12:00:00 TP2] hello\n[0000-00-00 99:99:99 TP3] world\n")
    w.feed(tb(1, "AssertionError: still seen"))
    w.flush()
    assert [(ln.tp_rank, ln.text[-5:]) for ln in sink.lines[:2]] == [(2, "hello"), (3, "world")]
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == [("assertion", [1])]


def test_line_over_one_megabyte_is_cut_and_the_next_alert_kept() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    huge = b"[" + TS.encode() + b" TP0] Receive: obj=GenerateReqInput(text='" + b"x" * (3 << 20) + b"')\n"
    data = huge + tb(6, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB")
    for i in range(0, len(data), 65536):
        w.feed(data[i:i + 65536])
    w.flush()
    first = sink.lines[0]
    assert first.line_no == 1 and len(first.text) < MAX_LINE_BYTES + TAIL_BYTES + 100 and "bytes cut]" in first.text
    (a,) = sink.alerts
    assert (a.alert_kind, a.ranks, a.first_line) == ("oom", [6], 2)


def test_huge_exception_line_still_alerts() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    w.feed(tb(2, "ValueError: " + "y" * (2 << 20)))
    w.flush()
    (a,) = sink.alerts
    assert a.alert_kind == "error" and a.ranks == [2] and len(a.message) <= 1000


def test_progress_bar_redrawn_ten_thousand_times_is_one_line() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    bar = "".join(f"\rCapturing batches (bs={i} avail_mem=1.0 GB): {i // 100}%|" for i in range(10_000))
    w.feed(f"[{TS} TP0] before\n{bar}\n".encode() + tb(0, "KeyError: 12"))
    w.flush()
    assert [ln.line_no for ln in sink.lines] == [1, 2, 3]
    assert sink.lines[1].text == "Capturing batches (bs=9999 avail_mem=1.0 GB): 99%|"
    assert [(a.alert_kind, a.first_line) for a in sink.alerts] == [("keyerror", 3)]


def test_burst_of_interleaved_ranks_loses_no_alert() -> None:
    rng = random.Random(5)
    chunks: list[bytes] = []
    expected: list[tuple[str, list[int]]] = []
    kinds = [("assertion", "AssertionError: shape {k}a"), ("keyerror", "KeyError: 'layer{k}'"),
             ("oom", "torch.OutOfMemoryError: CUDA out of memory. Incident {k}x")]
    n_lines = 0
    for k in range(30):
        for _ in range(330):
            r = rng.randrange(8)
            chunks.append(f"[{TS} TP{r}] Decode batch, #running-req: 8, #token: 900, token usage: 0.01, "
                          f"cuda graph: True, gen throughput (token/s): 700.00, #queue-req: 0\n".encode())
            n_lines += 1
        kind, final = kinds[k % 3]
        # letters, not digits, tell incidents apart (digits are normalised away when grouping)
        final = final.format(k="".join(chr(97 + int(c)) for c in str(k)))
        ranks = sorted(rng.sample(range(8), rng.randrange(1, 9)))
        for r in ranks:
            chunks.append(tb(r, final))
            n_lines += 4
        expected.append((kind, ranks))
    data = b"".join(chunks)
    assert n_lines >= 10_000
    sink = Sink()
    w = LogWatcher(sink)
    for i in range(0, len(data), 8192):
        w.feed(data[i:i + 8192])
    w.flush()
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == expected
    assert w.decode_lines == 30 * 330


def test_late_continuation_keeps_the_rank() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    w.feed(f"[{TS} TP3] Prefill out of memory. Try to lower your batch size.\n".encode(), now_s=0.0)
    w.poll(0.1)
    w.feed(b"  Try to allocate 9216 tokens.\n", now_s=0.2)
    w.flush(now_s=0.3)
    assert [(ln.line_no, ln.tp_rank) for ln in sink.lines] == [(1, 3), (2, 3)]
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == [("oom", [3])]


async def wait_for(cond, timeout_s: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_follow_file_survives_truncation_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(f"[{TS} TP0] starting\n".encode())
    sink = Sink()
    stop = asyncio.Event()
    task = asyncio.create_task(follow_file(path, sink, poll_s=0.02, stop=stop))
    with open(path, "ab") as f:
        f.write(tb(1, "AssertionError: first"))
        f.flush()
    await wait_for(lambda: len(sink.alerts) == 1)
    # copytruncate: same inode, size back to 0
    with open(path, "r+b") as f:
        f.truncate(0)
    await asyncio.sleep(0.1)
    with open(path, "ab") as f:
        f.write(tb(2, "KeyError: 'after truncate'"))
    await wait_for(lambda: len(sink.alerts) == 2)
    # rotation: the old file moves away (with a last write), a new one takes the name
    with open(path, "ab") as f:
        f.write(tb(3, "torch.OutOfMemoryError: CUDA out of memory. last words"))
    os.rename(path, tmp_path / "server.log.1")
    path.write_bytes(f"[{TS} TP0] restarted\n".encode() + tb(4, "RuntimeError: NCCL error: after rotate"))
    await wait_for(lambda: len(sink.alerts) == 4)
    stop.set()
    watcher = await asyncio.wait_for(task, 2)
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == [
        ("assertion", [1]), ("keyerror", [2]), ("oom", [3]), ("nccl", [4])]
    # line numbers follow the file now at the path
    assert sink.alerts[1].first_line == 1 and sink.alerts[3].first_line == 2
    assert watcher.lines == 5


async def test_follow_file_from_end_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    sink = Sink()
    stop = asyncio.Event()
    task = asyncio.create_task(follow_file(path, sink, from_start=False, poll_s=0.02, stop=stop))
    await asyncio.sleep(0.05)  # the file does not exist yet
    path.write_bytes(tb(0, "KeyError: 'old'"))  # created after we started: read from its start
    await wait_for(lambda: len(sink.alerts) == 1)
    stop.set()
    await asyncio.wait_for(task, 2)

    old = tmp_path / "old.log"
    old.write_bytes(tb(0, "KeyError: 'history'"))
    sink2 = Sink()
    stop2 = asyncio.Event()
    task2 = asyncio.create_task(follow_file(old, sink2, from_start=False, poll_s=0.02, stop=stop2))
    await asyncio.sleep(0.1)
    with open(old, "ab") as f:
        f.write(tb(5, "AssertionError: new"))
    await wait_for(lambda: len(sink2.alerts) == 1)
    stop2.set()
    await asyncio.wait_for(task2, 2)
    assert [(a.alert_kind, a.ranks) for a in sink2.alerts] == [("assertion", [5])]


async def test_pump_alerts_before_eof_on_the_idle_timer() -> None:
    bus = EventBus()
    sub = bus.subscribe("test")
    reader = asyncio.StreamReader()
    w = LogWatcher(bus.publish)
    task = asyncio.create_task(w.pump(reader))
    reader.feed_data(b"[" + TS.encode() + b" TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, "
                     b"cuda graph: True, gen throughput (token/s): 89.50, #queue-req: 0\n")
    reader.feed_data(tb(7, "AssertionError: live"))
    alert = None
    deadline = asyncio.get_running_loop().time() + 2
    while alert is None:
        assert asyncio.get_running_loop().time() < deadline
        for e in sub.drain():
            if isinstance(e, Alert):
                alert = e
        await asyncio.sleep(0.01)
    assert not task.done()  # no EOF yet: the idle timer finished the record
    assert (alert.alert_kind, alert.ranks) == ("assertion", [7])
    reader.feed_eof()
    await asyncio.wait_for(task, 2)


async def test_pump_from_a_real_pipe() -> None:
    script = ("import sys\n"
              "sys.stdout.buffer.write(b'[2026-01-01 12:00:00 TP2] Scheduler hit an exception: Traceback (most recent call last):\\n"
              "  File \"x.py\", line 1, in f\\nKeyError: 12\\n')\n"
              "sys.stdout.buffer.write(b'\\xff not utf8\\n')\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE)
    sink = Sink()
    w = LogWatcher(sink)
    assert proc.stdout is not None
    await asyncio.wait_for(w.pump(proc.stdout), 10)
    await proc.wait()
    assert [(a.alert_kind, a.ranks) for a in sink.alerts] == [("keyerror", [2])]
    # an unprefixed line continues the record before it, bad bytes and all
    assert [ln.line_no for ln in sink.lines] == [1]
    assert sink.lines[0].text.endswith("\ufffd not utf8")


def test_endless_unprefixed_output_is_cut_into_bounded_records() -> None:
    sink = Sink()
    w = LogWatcher(sink)
    w.feed(f"[{TS} TP1] debug dump follows\n".encode() + b"".join(b"raw line %d\n" % i for i in range(5000)))
    w.feed(tb(1, "AssertionError: after the dump"))
    w.flush()
    assert max(ln.text.count("\n") for ln in sink.lines) < 2000
    assert sum(ln.text.count("\n") + 1 for ln in sink.lines) == 5001 + 4
    assert all(ln.tp_rank == 1 for ln in sink.lines)
    assert [(a.alert_kind, a.ranks, a.first_line) for a in sink.alerts] == [("assertion", [1], 5002)]
