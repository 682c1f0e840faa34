"""A plan preflights the same server command once per trial: --help runs once per process."""

import sys

from tuiapp.server.preflight import preflight


def test_help_is_asked_once_per_command(tmp_path):
    calls = tmp_path / "calls"
    script = tmp_path / "server.py"
    script.write_text(
        "import argparse, pathlib, sys\n"
        f"pathlib.Path({str(calls)!r}).open('a').write('x')\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--model-path')\n"
        "p.add_argument('--tp-size', type=int)\n"
        "p.parse_args()\n"
    )
    argv = [sys.executable, str(script), "--model-path", "m"]
    assert preflight(argv) == []
    assert preflight([*argv, "--tp-size", "8"]) == []
    problems = preflight([*argv, "--tp-sise", "8"])
    assert [p.flag for p in problems] == ["--tp-sise"]
    assert calls.read_text() == "x"
