"""Failure families the detector reads from real logs (docs/failure-detector.md): one test per
family over its published excerpts in tests/data/logs_wild, and the rules of grouping
(per-request failures are one warning with a growing count; a death names its cause)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tuiapp.commands.logscan import scan_file
from tuiapp.events import Alert
from tuiapp.logwatch.watcher import LogWatcher
from tuiapp.record.printer import Printer

WILD = Path(__file__).parent / "data" / "logs_wild"

# family -> (kind, severity, excerpts that show it); each family has 3 or more real excerpts
FAMILIES = {
    "pd_transfer": ("transfer", "warning", ["w45", "w52", "w53", "w54"]),
    "numerical": ("numerical", "error", ["w46", "w55", "w64"]),
    "cuda_fault_in_watchdog": ("cuda_fault", "error", ["w47", "w48", "w56"]),
    "ep_bootstrap": ("ep_bootstrap", "error", ["w50", "w51", "w62", "w63"]),
    "startup_argparse": ("error", "error", ["w49", "w57", "w58"]),
    "kernel_xid": ("xid", "error", ["w59", "w60", "w61"]),
}


def _log(prefix: str) -> Path:
    (path,) = WILD.glob(f"{prefix}_*.log")
    return path


@pytest.mark.parametrize("family", FAMILIES)
def test_family_found_in_each_published_excerpt(family: str) -> None:
    kind, severity, prefixes = FAMILIES[family]
    for prefix in prefixes:
        log = _log(prefix)
        got = scan_file(str(log))
        want = json.loads(log.with_suffix(".expected.json").read_text())
        ours = [i for i in got["incidents"] if i["kind"] == kind]
        assert ours, f"{log.name}: no {kind} incident"
        assert [i for i in want["incidents"] if i["kind"] == kind] == ours
    alerts: list[Alert] = []
    w = LogWatcher(lambda e: alerts.append(e) if isinstance(e, Alert) else None)
    w.feed(_log(prefixes[0]).read_bytes(), now_s=0.0)
    w.flush(now_s=1.0)
    assert {a.severity for a in alerts if a.alert_kind == kind} == {severity}


def test_startup_error_points_at_the_error_line_not_the_pasted_command() -> None:
    for prefix in ("w49", "w57", "w58"):
        log = _log(prefix)
        lines = log.read_text().splitlines()
        (inc,) = scan_file(str(log))["incidents"]
        assert "error: unrecognized arguments" in lines[inc["first_line"] - 1]
        assert inc["first_line"] == inc["signature_line"]


def _transfer_line(t_s: int, rank: int, room: int) -> bytes:
    hh, mm, ss = t_s // 3600, t_s // 60 % 60, t_s % 60
    return (f"[2025-09-17 {hh:02d}:{mm:02d}:{ss:02d} TP{rank}] Decode transfer failed for request rank={rank} "
            f"decode_req.req.rid='r{room}' decode_req.req.bootstrap_room={room} with exception "
            f"KVTransferError(bootstrap_room={room}): Failed to get kvcache from prefill instance, it might be dead\n"
            ).encode()


def test_per_request_failures_are_one_warning_with_a_growing_count() -> None:
    alerts: list[Alert] = []
    w = LogWatcher(lambda e: alerts.append(e) if isinstance(e, Alert) else None)
    start = 16 * 3600
    for k in range(100):  # a failed request every second, on two ranks
        w.feed(_transfer_line(start + k, k % 2, 1000 + k), now_s=float(k))
        w.poll(float(k) + 0.5)
    w.feed(_transfer_line(start + 99 + 61, 0, 5), now_s=200.0)  # a new episode after a quiet minute
    w.flush(now_s=201.0)
    incs = w.summary()["incidents"]
    assert [(i["kind"], i["ranks"], i["count"]) for i in incs] == [("transfer", [0, 1], 100), ("transfer", [0], 1)]
    first = [a for a in alerts if a.alert_id == alerts[0].alert_id]
    assert {a.severity for a in first} == {"warning"}
    assert [a.count for a in first] == list(range(1, 101))  # every request is counted as it comes


def test_http_500_in_the_access_log_is_a_request_warning_and_503_health_is_not() -> None:
    w = LogWatcher(lambda e: None)
    lines = [
        '[2025-09-04 07:15:26] INFO:     127.0.0.1:42300 - "GET /health HTTP/1.1" 503 Service Unavailable',
        '[2025-09-04 07:15:27] INFO:     10.160.1.23:42180 - "POST /v1/completions HTTP/1.1" 200 OK',
        '[2025-09-04 07:15:28] INFO:     10.160.1.23:42181 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        '[2025-09-04 07:15:29] INFO:     10.160.1.23:42182 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
    ]
    w.feed("".join(line + "\n" for line in lines).encode(), now_s=0.0)
    w.flush(now_s=1.0)
    assert [(i["kind"], i["first_line"], i["count"]) for i in w.summary()["incidents"]] == [("request", 3, 2)]


def test_a_death_names_the_cuda_fault_it_followed() -> None:
    exp = json.loads(_log("w56").with_suffix(".expected.json").read_text())
    crash, fault = exp["incidents"]
    assert (crash["kind"], fault["kind"], crash["caused_by"]) == ("crash", "cuda_fault", fault["id"])
    assert scan_file(str(_log("w56")))["incidents"] == exp["incidents"]


def test_version_1_alerts_read_with_a_count_of_one() -> None:
    old = {"kind": "alert", "t_s": 1.0, "alert_kind": "oom", "message": "torch.OutOfMemoryError: x",
           "alert_id": 3, "caused_by": None}
    assert Alert.model_validate(old).count == 1


def test_headless_printer_shows_the_count_at_powers_of_two() -> None:
    out = io.StringIO()
    p = Printer(out)
    for n in range(1, 11):
        p.handle(Alert(t_s=float(n), alert_kind="transfer", severity="warning", message="Decode transfer failed",
                       alert_id=7, count=n))
    p.handle(Alert(t_s=11.0, alert_kind="oom", message="torch.OutOfMemoryError: x", alert_id=8))
    text = out.getvalue()
    # updates wait for the next printed line and the latest replaces the earlier: count=8
    # (the last power of two) is printed once, the counts in between never
    assert text.count("count=8") == 1
    assert not any(f"count={n}" in text for n in (2, 3, 4, 9, 10))
