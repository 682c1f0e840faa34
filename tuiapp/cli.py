"""Command line: one subcommand per module in tuiapp/commands/.

Command modules expose ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int`` and
import nothing heavy (never Textual) at module level, so ``--help`` and headless modes
stay fast and Textual-free.
"""

from __future__ import annotations

import argparse
import errno
import functools
import importlib
import os
import sys

from tuiapp import __version__
from tuiapp.common.errors import EXIT_INTERRUPTED, UsageError
from tuiapp.common.stdio import stdout_gone

COMMANDS = ["demo", "launch", "attach", "logscan", "gpus", "trials", "compare", "replay", "report"]


# A process that dies of SIGPIPE exits 128 + 13 to the shell; `tuiapp logscan F | head -1`
# ends with the same code, quietly.
EXIT_BROKEN_PIPE = 141


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``tuiapp attach: error: ...``), exit 2; the usage
    is one ``--help`` away."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tuiapp", description="Live monitor for SGLang tuning.")
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


@functools.cache
def long_options(command: str) -> tuple[str, ...]:
    """The long options of ``tuiapp COMMAND`` (tuiapp's own when COMMAND is unknown), to judge
    abbreviations as our argparse does."""
    parser = build_parser()
    subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    chosen = subs.choices.get(command, parser) if subs is not None else parser
    return tuple(o for o in chosen._option_string_actions if o.startswith("--"))


def remember_secrets(args: argparse.Namespace) -> None:
    """Every secret given to tuiapp (``--api-key``, however abbreviated: argparse has already
    resolved it to its dest) and in a server command, so that every sink masks it by value."""
    from tuiapp.common.redact import is_secret_name, remember, secret_values, set_own_options

    set_own_options(long_options(getattr(args, "command", None) or ""))

    for dest, value in vars(args).items():
        if is_secret_name(dest) and isinstance(value, str):
            remember(value)
    server = getattr(args, "server", None)
    if isinstance(server, list):
        remember(*secret_values([str(t) for t in server], os.environ))


# Options that name a file tuiapp writes: a directory there is a usage error now, not a
# traceback when the file is written (maybe hours later).
_WRITTEN_FILES = ("record", "summary", "ledger", "ledger_md", "ledger_csv", "output", "html", "log")


def check_written_paths(args: argparse.Namespace) -> None:
    from pathlib import Path

    for dest in _WRITTEN_FILES:
        value = getattr(args, dest, None)
        if isinstance(value, str) and value and Path(value).is_dir():
            raise UsageError(f"--{dest.replace('_', '-')} {value}: is a directory")
    log_dir = getattr(args, "log_dir", None)
    if isinstance(log_dir, str) and Path(log_dir).exists() and not Path(log_dir).is_dir():
        raise UsageError(f"--log-dir {log_dir}: not a directory")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    remember_secrets(args)
    try:
        check_written_paths(args)
        return int(args._run(args) or 0)
    except UsageError as exc:
        print(f"tuiapp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `tuiapp logscan F | head -1`: the reader has seen enough
        stdout_gone()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        stdout_gone()  # the terminal went away (an SSH drop) while we printed
        return 1


def entry() -> int:
    """The ``tuiapp`` command (and ``python -m tuiapp``): ``main`` in a process of its own, so
    the garbage collector's start-up settling applies (tests call ``main`` in theirs)."""
    from tuiapp.common.gc_settle import settle_heap_after_start

    settle_heap_after_start()
    return main()


if __name__ == "__main__":
    sys.exit(entry())
