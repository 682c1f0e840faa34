"""--help describes every option of every command (a bare flag in the list tells a user nothing)."""

import argparse

from tuiapp.cli import build_parser


def test_every_option_of_every_command_has_a_description():
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {'/'.join(action.option_strings) or action.dest}"
               for name, sub in subs.choices.items() for action in sub._actions
               if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert missing == []
