"""tuiapp logscan FILE: the live log watcher run over a finished log (post-mortem)."""

from __future__ import annotations

import argparse

HELP = "scan a finished SGLang server log: readiness, throughput, and every failure with its ranks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="server log file ('-' for stdin)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a report")


def scan_file(path: str) -> dict:
    """The watcher's summary of a whole file (read in chunks, so any size works)."""
    import sys

    from tuiapp.common.errors import UsageError
    from tuiapp.logwatch.watcher import LogWatcher

    watcher = LogWatcher(lambda _event: None, log_lines=False)
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        with stream:
            while chunk := stream.read(1 << 20):
                watcher.feed(chunk, now_s=0.0)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    watcher.flush(now_s=0.0)
    summary = watcher.summary()
    summary["_lines"] = watcher.lines
    return summary


def _report(path: str, s: dict) -> str:
    def num(v: float | None, unit: str = "") -> str:
        return "n/a" if v is None else f"{v:g}{unit}"

    out = [
        f"{path}: {s['_lines']} lines",
        f"  ready:            {'yes' if s['ready'] else 'no (ready line not seen)'}",
        f"  decode lines:     {s['decode_lines']}",
        f"  last gen tok/s:   {num(s['last_gen_throughput'])}",
        f"  last accept len:  {num(s['last_accept_len'])}",
    ]
    incidents = s["incidents"]
    if not incidents:
        out.append("  incidents:        none")
    else:
        out.append(f"  incidents:        {len(incidents)}")
        for inc in incidents:
            ranks = ",".join(str(r) for r in inc["ranks"]) or "-"
            out.append(f"  line {inc['first_line']:>7}  {inc['kind']:<11} ranks {ranks:<16} {inc['message']}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    import orjson

    summary = scan_file(args.file)
    if args.json:
        summary.pop("_lines", None)
        print(orjson.dumps(summary).decode())
    else:
        print(_report(args.file, summary))
    return 0
