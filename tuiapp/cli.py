"""Command line: one subcommand per module in tuiapp/commands/.

Command modules expose ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int`` and
import nothing heavy (never Textual) at module level, so ``--help`` and headless modes
stay fast and Textual-free.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tuiapp import __version__
from tuiapp.common.errors import UsageError

COMMANDS = ["demo", "launch", "attach", "logscan", "gpus", "trials", "replay", "report"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tuiapp", description="Live monitor for SGLang tuning.")
    parser.add_argument("--version", action="version", version=f"tuiapp {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"tuiapp.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tuiapp.commands.{name}":
                raise
            continue
        sub = subs.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UsageError as exc:
        print(f"tuiapp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
