import gzip
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tuiapp.events import Alert, GpuSample, Note, RunDone, load_event
from tuiapp.record.reading import read_recording
from tuiapp.record.recorder import Recorder

EVENTS = [
    GpuSample(t_s=100.0, index=0, mem_used_bytes=5, mem_total_bytes=10, pcie_rx_bytes_s=1.5e9),
    Alert(t_s=101.0, alert_kind="oom", message="CUDA out of memory", ranks=[0, 3], first_line=7, alert_id=1),
    RunDone(t_s=102.0, run_index=0, requests=5, duration_s=3.0, decode_tok_s=89.5, output_tok_s=88.0),
    Note(t_s=103.0, level="warning", text="telemetry off"),
]


def test_header_and_events_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    extras = {"title": "t", "gpus": [{"index": 0, "name": "H200"}], "sglang_version": "0.5.6",
              "argv": ["tuiapp", "attach", "http://x", "--api-key", "sekret-value", "--hf-token=hf_abcdef"]}
    with Recorder(path, extras) as rec:
        for ev in EVENTS:
            rec.write(ev)
    raw = path.read_bytes()
    assert b"sekret-value" not in raw and b"hf_abcdef" not in raw
    lines = raw.splitlines()
    header = orjson.loads(lines[0])
    assert header["format"] == "tuiapp-recording" and header["version"] == 1
    assert header["gpus"] == [{"index": 0, "name": "H200"}] and header["sglang_version"] == "0.5.6"
    assert header["argv"][:4] == ["tuiapp", "attach", "http://x", "--api-key"] and header["argv"][4] != "sekret-value"
    assert {"tool_version", "start_t_s", "host", "title"} <= header.keys()
    assert [load_event(line) for line in lines[1:]] == EVENTS
    back = read_recording(path)
    assert back.events == EVENTS and back.skipped_lines == 0 and back.header == header


def test_file_mode_is_0600_even_over_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text("old")
    path.chmod(0o644)
    with Recorder(path) as rec:
        rec.write(EVENTS[0])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    gz = tmp_path / "rec.jsonl.gz"
    with Recorder(gz):
        pass
    assert stat.S_IMODE(os.stat(gz).st_mode) == 0o600


def test_gzip_recording_is_readable_while_open_and_after(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl.gz"
    rec = Recorder(path, flush_interval_s=60)
    rec.open()
    for ev in EVENTS:
        rec.write(ev)
    rec.flush()  # a sync flush: what is on disk decompresses so far, the stream still open
    assert read_recording(path).events == EVENTS
    rec.write(Note(t_s=104.0, text="more"))
    rec.close()
    assert len(read_recording(path).events) == 5
    assert gzip.decompress(path.read_bytes()).count(b"\n") == 6


def test_events_reach_disk_within_the_flush_interval_without_close(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    rec = Recorder(path, flush_interval_s=0.2)
    rec.open()
    rec.write(EVENTS[0])
    deadline = time.monotonic() + 3
    while len(path.read_bytes().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(path.read_bytes().splitlines()) == 2
    rec.close()


CHILD = r"""
import asyncio, os, sys, time
from tuiapp.bus import EventBus
from tuiapp.events import Note
from tuiapp.record.recorder import Recorder

side = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND)

async def main():
    bus = EventBus()
    asyncio.create_task(Recorder(sys.argv[1]).run(bus.subscribe("recorder")))
    i = 0
    while True:
        t = time.time()
        bus.publish(Note(t_s=t, text=str(i)))
        os.write(side, f"{i} {t}\n".encode())  # unbuffered: survives the kill
        if i == 0:
            print("ready", flush=True)
        i += 1
        await asyncio.sleep(0.01)

asyncio.run(main())
"""


@pytest.mark.slow
def test_sigkill_loses_at_most_the_last_second(tmp_path: Path) -> None:
    path, side = tmp_path / "rec.jsonl", tmp_path / "published.txt"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(side)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        time.sleep(2.0)
        kill_t = time.time()
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(10)
    published = [(int(i), float(t)) for i, t in (line.split() for line in side.read_text().splitlines())]
    recorded = {int(ev.text) for ev in read_recording(path).events}
    old_enough = [i for i, t in published if t < kill_t - 1.0]
    assert len(old_enough) > 50  # the child really ran for a while
    assert [i for i in old_enough if i not in recorded] == []
    assert recorded <= {i for i, _ in published}


async def test_an_unwritable_path_is_one_line_on_stderr_not_a_crash(tmp_path: Path, capsys) -> None:
    from tuiapp.bus import EventBus

    blocker = tmp_path / "file"
    blocker.write_text("x")
    bus = EventBus()
    rec = Recorder(blocker / "sub" / "rec.jsonl")  # a directory under a plain file
    await rec.run(bus.subscribe("recorder"))
    err = capsys.readouterr().err
    assert err.startswith("tuiapp: cannot record to ") and err.count("\n") == 1
    assert rec.error is not None and bus.dropped == {}
