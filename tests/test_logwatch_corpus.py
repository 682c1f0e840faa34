"""logscan --json against the log corpus (tests/data/logs), whole-file and chunked live."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from tuiapp.cli import main
from tuiapp.events import Alert
from tuiapp.logwatch.watcher import LogWatcher

LOGS = Path(__file__).parent / "data" / "logs"
CORPUS = sorted(LOGS.glob("*.log"))


def test_corpus_is_there() -> None:
    names = {p.stem for p in CORPUS}
    assert len(names) >= 15
    kinds = set()
    for p in CORPUS:
        kinds |= {i["kind"] for i in json.loads(p.with_suffix(".expected.json").read_text())["incidents"]}
    assert kinds >= {"oom", "assertion", "keyerror", "jit_arch", "nccl", "crash", "hang", "kv_pressure", "error"}


@pytest.mark.parametrize("log", CORPUS, ids=lambda p: p.stem)
def test_logscan_json_matches_expected(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(log), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one object
    got = json.loads(out)
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    assert got == expected


@pytest.mark.parametrize("log", CORPUS, ids=lambda p: p.stem)
def test_live_chunks_give_the_same_incidents(log: Path) -> None:
    """Arbitrary read boundaries and a live clock change nothing: records are finished by the
    next record or by the idle timer, never cut in two by a chunk boundary."""
    data = log.read_bytes()
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    rng = random.Random(log.stem)
    alerts: list[Alert] = []
    w = LogWatcher(lambda e: alerts.append(e) if isinstance(e, Alert) else None)
    t = 100.0
    i = 0
    while i < len(data):
        n = rng.choice([1, 7, 64, 500, 4096, 65536])
        w.feed(data[i:i + n], now_s=t)
        i += n
        t += 0.001  # a fast writer: chunks 1 ms apart, never idle long enough to cut a record
        w.poll(t)
    w.flush(now_s=t)
    got = w.summary()
    assert got == expected
    # every alert update kept its id; the last state of each id is the incident
    last = {a.alert_id: a for a in alerts}
    assert [(a.alert_kind, a.ranks, a.first_line) for a in last.values()] == [
        (i["kind"], i["ranks"], i["first_line"]) for i in expected["incidents"]]


def test_healthy_and_decoy_logs_raise_nothing() -> None:
    quiet = [p for p in CORPUS if p.stem.startswith(("healthy", "decoys"))]
    assert len(quiet) >= 4
    for p in quiet:
        alerts: list[Alert] = []
        w = LogWatcher(lambda e, out=alerts: out.append(e) if isinstance(e, Alert) else None)
        w.feed(p.read_bytes())
        w.flush()
        assert alerts == [], p.name
        assert w.ready


# What a server writes with one write(): a logging record whole (traceback included), a
# c10 or torchrun line, an NCCL line, a tqdm redraw, a raw crash message.
_WRITE_START = re.compile(
    rb"\(|\[\d{4}-|\[rank\d+\]|\r|\S+:\d+:\d+ \[\d+\] NCCL|terminate called|Fatal Python|Killed|usage: |/\S+\.py:\d+: ")


def _writes(data: bytes) -> list[bytes]:
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if out and not _WRITE_START.match(line):
            out[-1] += line
        else:
            out.append(line)
    return out


@pytest.mark.parametrize("log", CORPUS, ids=lambda p: p.stem)
def test_slow_writer_with_idle_gaps_gives_the_same_answer(log: Path) -> None:
    """Gaps longer than the idle timeout between writes: records are finished by the timer,
    tracebacks wait for their exception line, and nothing about the answer changes."""
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    rng = random.Random(log.stem + "slow")
    w = LogWatcher(lambda e: None)
    t = 0.0
    for chunk in _writes(log.read_bytes()):
        w.feed(chunk, now_s=t)
        gap = rng.choice([0.0, 0.001, 0.01, 0.045])
        while gap > 0:  # the 20 ms timer
            step = min(gap, 0.02)
            t += step
            gap -= step
            w.poll(t)
    w.flush(now_s=t + 1)
    assert w.summary() == expected
