"""tuiapp report FILE: a recording as Markdown with SVG charts beside it."""

from __future__ import annotations

import argparse

HELP = "write a Markdown report of a recording: ledger, runs, alerts, charts (SVG beside it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a recording (.jsonl or .jsonl.gz) written by --record")
    parser.add_argument("-o", "--output", metavar="OUT.md",
                        help="report path (default: the recording's name with .md, beside it)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuiapp.common.errors import UsageError
    from tuiapp.record.reading import RecordingError, read_recording
    from tuiapp.record.report import write_report

    src = Path(args.file)
    if args.output:
        out = Path(args.output)
        if out.is_dir():  # before any chart is written beside it
            raise UsageError(f"-o {out}: is a directory; give the report's file name, e.g. {out / 'report.md'}")
        if not out.parent.is_dir():  # a typo in the path must not grow a tree of new directories
            raise UsageError(f"-o {out}: no directory {str(out.parent)!r}")
    try:
        rec = read_recording(src)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    if not args.output:
        stem = src.name
        for suffix in (".gz", ".jsonl", ".json"):
            stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
        out = src.with_name(stem + ".md")
    try:
        paths = write_report(rec, out)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    print(f"wrote {paths[0]} and {len(paths) - 1} charts")
    if rec.skipped_lines:
        print(f"{rec.skipped_lines} corrupt or truncated lines were skipped")
    return 0
