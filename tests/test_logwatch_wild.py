"""The failure detector on SGLang logs as users published them (tests/data/logs_wild).

Every excerpt's expected answer was written by hand from reading it (README.md there gives
each source). The same answer must come out of ``logscan --json``, of the live watcher fed
in arbitrary chunks, of a slow writer, and of the excerpt wrapped the way log collectors
write it (docker -t, docker's json-file logs, compose, kubectl --prefix, the kubelet's CRI
files, journald, cloud logging and Kibana exports, newest entry first too, ANSI colours).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tuiapp.cli import main
from tuiapp.commands.logscan import scan_file
from tuiapp.events import Alert
from tuiapp.logwatch.watcher import LogWatcher

WILD = Path(__file__).parent / "data" / "logs_wild"
LOGS = sorted(WILD.glob("*.log"))
KINDS = {"oom", "nccl", "jit_arch", "keyerror", "assertion", "hang", "kv_pressure", "error", "crash",
         "transfer", "request", "numerical", "cuda_fault", "ep_bootstrap", "xid"}


def expected(log: Path) -> dict:
    return json.loads(log.with_suffix(".expected.json").read_text())


def test_corpus_is_what_the_readme_says() -> None:
    assert len(LOGS) >= 40
    readme = (WILD / "README.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| (w\w+) \| (https://github\.com/\S+) \| (\d{4})-", readme, re.M)}
    assert set(rows) == {p.stem for p in LOGS}  # every excerpt has its source, and no row is stale
    years = set(re.findall(r"^\| w\w+ \| \S+ \| (\d{4})-", readme, re.M))
    assert {"2024", "2025", "2026"} <= years
    answers = [expected(p) for p in LOGS]
    assert {i["kind"] for a in answers for i in a["incidents"]} == KINDS
    decoys = [p for p, a in zip(LOGS, answers, strict=True) if not a["incidents"] and "decoy" in p.stem]
    assert len(decoys) >= 8
    assert sum(1 for a in answers if a["decode_lines"]) >= 5  # throughput figures are checked too


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_logscan_json(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected(log)


def _live(data: bytes, seed: str) -> tuple[dict, list[Alert]]:
    rng = random.Random(seed)
    alerts: list[Alert] = []
    w = LogWatcher(lambda e: alerts.append(e) if isinstance(e, Alert) else None)
    t, i = 100.0, 0
    while i < len(data):
        n = rng.choice([1, 7, 64, 500, 4096])
        w.feed(data[i:i + n], now_s=t)
        i += n
        t += 0.001
        w.poll(t)
    w.flush(now_s=t)
    return w.summary(), alerts


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_live_in_chunks(log: Path) -> None:
    """Read boundaries change nothing, and the alerts a live watcher published end in the
    incidents logscan reports, causes included."""
    exp = expected(log)
    got, alerts = _live(log.read_bytes(), log.stem)
    assert got == exp
    last = list({a.alert_id: a for a in alerts}.values())
    ids = [a.alert_id for a in last]
    assert [(a.alert_kind, a.ranks, a.first_line, a.signature_line, a.message,
             ids.index(a.caused_by) + 1 if a.caused_by else None) for a in last] == [
        (i["kind"], i["ranks"], i["first_line"], i["signature_line"], i["message"], i["caused_by"])
        for i in exp["incidents"]]


_RECORD_START = re.compile(r"\[\d{4}-|\[\d\d[-:]|\[[A-Z]+\d+\]|\[rank\d+\]|\S+:\d+:\d+ \[\d+\] NCCL|terminate called"
                           r"|Fatal Python|Killed|\[Gloo\]|\S+  \| |\(\w+ pid=")


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_slow_writer(log: Path) -> None:
    """A record per write with gaps longer than the idle timeout between writes."""
    writes: list[bytes] = []
    for line in log.read_bytes().splitlines(keepends=True):
        if writes and not _RECORD_START.match(line.decode()):
            writes[-1] += line
        else:
            writes.append(line)
    rng = random.Random(log.stem)
    w = LogWatcher(lambda e: None)
    t = 0.0
    for chunk in writes:
        w.feed(chunk, now_s=t)
        for _ in range(rng.choice([0, 1, 3])):
            t += 0.02
            w.poll(t)
    w.flush(now_s=t + 1)
    assert w.summary() == expected(log)


# ---------------------------------------------------------------- collectors' envelopes

def _iso(k: int) -> str:
    ms = k
    return f"2025-04-07T19:{13 + ms // 60_000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}869663Z"


def _kibana(k: int) -> str:
    ms = k
    return f"May 16, 2026 @ 20:{46 + ms // 60_000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}    "


ENVELOPES: dict[str, Callable[[int, str], str]] = {
    "docker_t": lambda k, line: f"{_iso(k)} {line}",
    "compose": lambda k, line: f"sglang-1  | {line}",
    "compose_t": lambda k, line: f"sglang-1  | {_iso(k)} {line}",
    "kubectl_prefix": lambda k, line: f"[pod/sglang-0/sglang] {line}",
    "cri": lambda k, line: f"{_iso(k)} stdout F {line}",
    "journald": lambda k, line: f"Dec 01 20:18:{k // 100 % 60:02d} gpu-node-1 sglang[81234]: {line}",
    "cloud": lambda k, line: f"{'ERROR' if 'rror' in line else 'INFO'} {_iso(k)} {line}",
    "ansi": lambda k, line: f"\x1b[32m{line}\x1b[0m" if line else line,
    "docker_json_file": lambda k, line: json.dumps({"log": line + "\n", "stream": "stdout", "time": _iso(k)},
                                                     separators=(",", ":")),
}
NEWEST_FIRST: dict[str, Callable[[int, str], str]] = {
    "cloud_newest_first": lambda k, line: f"{'ERROR' if 'rror' in line else 'DEFAULT'} {_iso(k)} {line}",
    "kibana_newest_first": lambda k, line: f"{_kibana(k)}{line}",
}


def _wrap(log: Path, env: Callable[[int, str], str]) -> list[str]:
    lines = log.read_bytes().decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    return [env(k, line) for k, line in enumerate(lines)]


@pytest.mark.parametrize("env", ENVELOPES, ids=str)
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_the_same_answer_through_a_collector(log: Path, env: str, tmp_path: Path) -> None:
    wrapped = "".join(f"{line}\n" for line in _wrap(log, ENVELOPES[env])).encode()
    path = tmp_path / "wrapped.log"
    path.write_bytes(wrapped)
    got = scan_file(str(path))
    got.pop("_lines")
    assert got == expected(log)
    # live: the envelope is recognised from the stream's first lines
    assert _live(wrapped, env)[0] == expected(log)


@pytest.mark.parametrize("env", NEWEST_FIRST, ids=str)
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_an_export_listing_the_newest_entry_first(log: Path, env: str, tmp_path: Path) -> None:
    """Entries are put back in the order they were written; lines are reported as the
    export numbers them."""
    lines = _wrap(log, NEWEST_FIRST[env])  # stamped oldest first, then listed newest first
    n = len(lines)
    path = tmp_path / "export.log"
    path.write_text("".join(f"{line}\n" for line in reversed(lines)))
    got = scan_file(str(path))
    got.pop("_lines")
    exp = expected(log)
    for inc in exp["incidents"]:
        inc["first_line"] = n + 1 - inc["first_line"]
        inc["signature_line"] = n + 1 - inc["signature_line"]
        for pair in inc["joined"]:
            pair[0] = n + 1 - pair[0]
        inc["repeats"] = [n + 1 - line for line in inc["repeats"]]
    assert got == exp
