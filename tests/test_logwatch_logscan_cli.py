"""tuiapp logscan: report, JSON shape, stdin, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tuiapp.cli import main

LOGS = Path(__file__).parent / "data" / "logs"


def test_missing_file_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(tmp_path / "nope.log"), "--json"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.count("\n") == 1 and "nope.log" in cap.err and "Traceback" not in cap.err


def test_directory_and_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    locked = tmp_path / "locked.log"
    locked.write_text("x\n")
    locked.chmod(0)
    try:
        if not _readable(locked):
            assert main(["logscan", str(locked)]) == 2
            assert capsys.readouterr().err.count("\n") == 1
    finally:
        locked.chmod(0o600)


def _readable(path: Path) -> bool:
    try:
        path.open("rb").close()
        return True
    except OSError:
        return False


def test_json_has_exactly_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(LOGS / "oom_torch_runtime_2ranks_0523.log"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert list(got) == ["ready", "decode_lines", "last_gen_throughput", "last_accept_len", "incidents"]
    assert all(list(i) == ["id", "kind", "ranks", "first_line", "signature_line", "message", "caused_by", "count",
                                 "joined", "repeats"]
               for i in got["incidents"])
    # the server's death is its own incident, caused by the OOM before it
    assert [(i["id"], i["kind"], i["caused_by"]) for i in got["incidents"]] == [(1, "oom", None), (2, "crash", 1)]
    assert isinstance(got["last_gen_throughput"], float) and isinstance(got["decode_lines"], int)


def test_readable_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(LOGS / "ep_flashinfer_assert_then_capture_oom_0523.log")]) == 0
    out = capsys.readouterr().out
    assert "ready:" in out and "incidents:        4" in out
    assert "assertion   ranks 0,1,2,3,4,5,6,7" in out
    assert "crash       ranks -" in out and "(after #1)" in out and "(after #3)" in out
    assert "Exception: Capture cuda graph failed" in out
    assert main(["logscan", str(LOGS / "healthy_0523_tp8_eagle3.log")]) == 0
    out = capsys.readouterr().out
    assert "incidents:        none" in out and "last accept len:" in out


def test_reads_stdin() -> None:
    data = (LOGS / "keyerror_torch_symm_mem_0523.log").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "tuiapp", "logscan", "-", "--json"], input=data,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert [(i["kind"], i["ranks"]) for i in got["incidents"]] == [("keyerror", list(range(8))), ("crash", [])]


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert main(["logscan", str(empty), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ready": False, "decode_lines": 0, "last_gen_throughput": None, "last_accept_len": None, "incidents": []}


def test_logscan_does_not_import_textual() -> None:
    log = LOGS / "hang_scheduler_watchdog_0523.log"
    code = f"import sys; from tuiapp.commands.logscan import scan_file; scan_file({str(log)!r}); print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
