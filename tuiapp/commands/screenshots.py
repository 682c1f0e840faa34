"""``--screenshot-dir``: where the dashboard's screenshots go (the command palette's
"Save screenshot"). Textual's default, ~/Downloads, does not exist on most servers, where
the save failed; ours is the current directory."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--screenshot-dir", metavar="DIR", type=_directory, default=None,
                        help="where the palette's 'Save screenshot' writes its SVG (default: the current directory)")


def _directory(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no directory {value!r}")
    return path
