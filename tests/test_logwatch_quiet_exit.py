"""One rule for "stopped, not failed" (tuiapp/logwatch/quiet_exit.py) and for a caption above a paste
(tuiapp/logwatch/caption.py), read the same by the families, the generic layer and the last resort."""

from __future__ import annotations

import pytest
from logwatch_helpers import scan_text

from tuiapp.logwatch.caption import is_caption
from tuiapp.logwatch.quiet_exit import stops_quietly


@pytest.mark.parametrize(("name", "line", "quiet"), [
    ("KeyboardInterrupt", "KeyboardInterrupt", True),
    ("asyncio.exceptions.CancelledError", "asyncio.exceptions.CancelledError", True),
    ("UserWarning", "UserWarning: deprecated", True),
    ("SystemExit", "SystemExit", True),
    ("SystemExit", "SystemExit: 0", True),
    ("SystemExit", "SystemExit: None", True),
    ("SystemExit", "SystemExit: 1", False),
    ("SystemExit", "SystemExit: could not load the model", False),
    ("RuntimeError", "RuntimeError: x", False),
])
def test_what_stops_quietly(name: str, line: str, quiet: bool) -> None:
    assert stops_quietly(name, line) is quiet


def test_a_traceback_ending_in_a_non_zero_exit_is_raised_by_every_layer() -> None:
    tb = ("Traceback (most recent call last):\n"
          '  File "/x/serve.py", line 9, in main\n'
          "    sys.exit(1)\n")
    (inc,) = scan_text(tb + "SystemExit: 1\n")
    assert inc["message"] == "SystemExit: 1"
    assert scan_text(tb + "SystemExit: 0\n") == []
    assert scan_text(tb + "KeyboardInterrupt\n") == []


@pytest.mark.parametrize(("line", "caption"), [
    ("Error Message", True), ("Error message:", True), ("### Error logs", True), ("**Error:**", True),
    ("ERROR", True), ("Crash report", True),
    ("Error: CUDA out of memory", False), ("Error Message: connection refused", False),
    ("ERROR 03-28 10:55:03 [dump_input.py:81] Dumping scheduler stats", False),
])
def test_a_caption_names_what_follows(line: str, caption: bool) -> None:
    assert is_caption(line) is caption


def test_a_caption_above_a_paste_is_no_incident_and_the_paste_is() -> None:
    text = "Error message\n\nsrun: error: node7: task 0: Killed\n"
    (inc,) = scan_text(text)
    assert "Killed" in inc["message"]
