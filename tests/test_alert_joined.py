"""A knock-on joined to its cause raises no alert of its own but is told: in the alert's
details, by the headless printer and by logscan (docs/failure-detector.md)."""

from __future__ import annotations

import io

from tuiapp.commands.logscan import _report
from tuiapp.events import Alert
from tuiapp.record.printer import Printer
from tuiapp.tui.screens.details import alert_text
from tuiapp.tui.store import DashboardStore

DEATH = dict(alert_kind="crash", message="Subprocess scheduler_0 crashed with exit code -9", alert_id=5)
THEN = (12, 'INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 500 Internal Server Error')


def test_recordings_from_before_read_with_nothing_joined() -> None:
    old = {"kind": "alert", "t_s": 1.0, "alert_kind": "oom", "message": "x", "alert_id": 3, "count": 2}
    assert Alert.model_validate(old).joined == []
    # and what is written reads back the same
    a = Alert(t_s=1.0, **DEATH, joined=[THEN])
    assert Alert.model_validate_json(a.model_dump_json()).joined == [THEN]


def test_the_printer_tells_a_joined_line_once() -> None:
    out = io.StringIO()
    p = Printer(out)
    p.handle(Alert(t_s=1.0, **DEATH))
    p.handle(Alert(t_s=2.0, **DEATH, joined=[THEN]))
    p.handle(Alert(t_s=3.0, **DEATH, joined=[THEN]))  # nothing new joined: no update
    p.handle(Alert(t_s=4.0, alert_kind="oom", message="torch.OutOfMemoryError: x", alert_id=6))
    text = out.getvalue()
    assert text.count("then line 12: ") == 1
    assert f"| then line 12: {THEN[1]}" in text


def test_the_details_screen_has_a_then_row_per_joined_line() -> None:
    body = alert_text(Alert(t_s=1.0, **DEATH, joined=[THEN, (14, "EOFError")]), DashboardStore()).plain
    assert f"then     line 12: {THEN[1]}\nthen     line 14: EOFError\n" in body


def test_logscans_report_puts_the_joined_lines_under_their_incident() -> None:
    summary = {"_lines": 20, "ready": False, "decode_lines": 0, "last_gen_throughput": None,
               "last_accept_len": None,
               "incidents": [{"id": 1, "kind": "crash", "ranks": [], "first_line": 3, "signature_line": 3,
                              "message": DEATH["message"], "caused_by": None, "count": 1,
                              "joined": [list(THEN)]}]}
    lines = _report("x.log", summary).splitlines()
    assert lines[-2].endswith(DEATH["message"])
    assert lines[-1].split() == ["line", "12", "then:", *THEN[1].split()]


def test_an_incident_tells_where_each_copy_it_counted_is() -> None:
    # two ranks print the same KeyError traceback: one incident, counted twice, and where the second is
    from pathlib import Path

    from tuiapp.commands.logscan import scan_file
    log = Path(__file__).parent / "data" / "logs_wild" / "w01_keyerror_eagle_old_sigquit.log"
    first = scan_file(str(log))["incidents"][0]
    assert (first["kind"], first["count"]) == ("keyerror", 2)
    second = first["repeats"][0]
    assert log.read_text().splitlines()[second - 1].strip() == first["message"]
    assert second != first["signature_line"]
    summary = {"_lines": 30, "ready": False, "decode_lines": 0, "last_gen_throughput": None,
               "last_accept_len": None, "incidents": [{**first, "joined": []}]}
    assert _report("x.log", summary).splitlines()[-1].split() == ["again", "at", "lines", str(second)]
    body = alert_text(Alert(t_s=1.0, alert_kind="keyerror", message=first["message"], count=2,
                            repeats=[second]), DashboardStore()).plain
    assert f"again    lines {second}\n" in body
    # recordings from before read with none
    assert Alert.model_validate({"kind": "alert", "t_s": 1.0, "alert_kind": "oom", "message": "x"}).repeats == []
