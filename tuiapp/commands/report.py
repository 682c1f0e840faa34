"""tuiapp report FILE: a recording as Markdown with SVG charts beside it."""

from __future__ import annotations

import argparse

HELP = "write a report of a recording: ledger, runs, alerts, charts (Markdown with SVGs beside it, or one HTML file)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a recording (.jsonl or .jsonl.gz) written by --record")
    parser.add_argument("-o", "--output", metavar="OUT.md",
                        help="report path (default: the recording's name with .md, beside it)")
    parser.add_argument("--html", metavar="OUT.html",
                        help="write one self-contained HTML page (charts and styles inline) instead of Markdown;"
                             " with -o, both")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuiapp.common.errors import UsageError
    from tuiapp.record.reading import RecordingError, read_recording
    from tuiapp.record.report import write_report

    src = Path(args.file)
    for flag, value, example in (("-o", args.output, "report.md"), ("--html", args.html, "report.html")):
        if value:
            out = Path(value)
            if out.is_dir():  # before any chart is written beside it
                raise UsageError(f"{flag} {out}: is a directory; give the report's file name, e.g. {out / example}")
            if not out.parent.is_dir():  # a typo in the path must not grow a tree of new directories
                raise UsageError(f"{flag} {out}: no directory {str(out.parent)!r}")
    try:
        rec = read_recording(src)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    if args.html:
        from tuiapp.common.atomic_write import write_atomic
        from tuiapp.record.html_report import build_html

        page = Path(args.html)
        try:
            write_atomic(page, build_html(rec))
        except OSError as exc:
            raise UsageError(f"cannot write {page}: {exc.strerror}") from None
        print(f"wrote {page} (one file: charts and styles inline)")
        if not args.output:
            return 0
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
