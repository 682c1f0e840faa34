"""A plan preflights the same server command once per trial: --help runs once per process."""

import sys

from stand_ins import fake_sglang, runs_of

from tuiapp.server import preflight as preflight_module
from tuiapp.server.preflight import preflight


def test_help_is_asked_once_per_command(tmp_path, monkeypatch):
    root = fake_sglang(tmp_path, profile="0.5.23")
    monkeypatch.setenv("PYTHONPATH", str(root))
    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "m"]
    assert preflight(argv) == []
    assert preflight([*argv, "--tp-size", "8"]) == []
    problems = preflight([*argv, "--tp-sise", "8"])
    assert [p.flag for p in problems] == ["--tp-sise"]
    assert runs_of(root) == ["--help"]
