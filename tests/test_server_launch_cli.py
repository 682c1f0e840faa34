"""tuiapp launch: bad options are one-line usage errors, checked before anything starts."""

import pytest

from tuiapp.cli import main


@pytest.mark.parametrize("option", [["--ready-timeout", "0"], ["--ready-timeout", "-3"], ["--concurrency", "0"]])
def test_bad_launch_options_are_one_line_errors(option, capsys):
    code = main(["launch", "--headless", "--no-preflight", *option, "--", "--model-path", "m"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("tuiapp launch: error: --") and err.count("\n") == 1


def test_a_port_that_is_not_a_number_is_a_usage_error(capsys):
    code = main(["launch", "--headless", "--", "--model-path", "m", "--port", "abc"])
    assert code == 2
    assert capsys.readouterr().err == "tuiapp launch: error: server command: --port 'abc' is not a number\n"
