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
    line_map: list[int] | None = None
    try:
        with stream:
            head = stream.read(1 << 16)
            order = _newest_first_order(head, stream)
            if order is not None:
                data, line_map = order
                watcher.feed(data, now_s=0.0)
            else:
                chunk = head
                while chunk:
                    watcher.feed(chunk, now_s=0.0)
                    chunk = stream.read(1 << 20)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    watcher.flush(now_s=0.0)
    summary = watcher.summary()
    if line_map is not None:
        # report the lines of the file as given, not of the re-ordered stream
        for inc in summary["incidents"]:
            for key in ("first_line", "signature_line"):
                if inc[key] is not None and 0 < inc[key] <= len(line_map):
                    inc[key] = line_map[inc[key] - 1]
            for pair in inc["joined"]:
                if 0 < pair[0] <= len(line_map):
                    pair[0] = line_map[pair[0] - 1]
            inc["repeats"] = [line_map[n - 1] if 0 < n <= len(line_map) else n for n in inc["repeats"]]
    summary["_lines"] = watcher.lines
    return summary


def _newest_first_order(head: bytes, stream) -> tuple[bytes, list[int]] | None:
    """A collector export that lists the newest entry first (cloud logging, Kibana): the
    whole file, entries put in the order they were written, and each new line's number in
    the file. None for an ordinary file (the common case reads it as a stream)."""
    from tuiapp.logwatch.envelope import EnvelopeDetector, entries_newest_first
    from tuiapp.logwatch.lines import decode

    sample = decode(head).split("\n")[:200]
    det = EnvelopeDetector()
    for line in sample:
        det.unwrap(line)
    if not det.layers or not entries_newest_first(sample, det):
        return None
    text = decode(head + stream.read())
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    entries: list[list[int]] = []  # an entry: its header line and the lines that continue it
    for i, line in enumerate(lines):
        if det.timestamp(line) is not None or not entries:
            entries.append([i])
        else:
            entries[-1].append(i)
    order = [i for entry in reversed(entries) for i in entry]
    data = "".join(lines[i] + "\n" for i in order).encode("utf-8", "surrogateescape")
    return data, [i + 1 for i in order]


def _report(path: str, s: dict) -> str:
    from tuiapp.common.numfmt import num

    out = [
        f"{path}: {s['_lines']} lines",
        f"  ready:            {'yes' if s['ready'] else 'no (ready line not seen)'}",
        f"  decode lines:     {s['decode_lines']}",
        f"  last gen tok/s:   {num(s['last_gen_throughput'], 'g')}",
        f"  last accept len:  {num(s['last_accept_len'], 'g')}",
    ]
    incidents = s["incidents"]
    if not incidents:
        out.append("  incidents:        none")
    else:
        out.append(f"  incidents:        {len(incidents)}")
        for inc in incidents:
            ranks = ",".join(str(r) for r in inc["ranks"]) or "-"
            cause = f" (after #{inc['caused_by']})" if inc.get("caused_by") else ""
            if inc.get("count", 1) > 1:
                cause += f" x{inc['count']}"
            out.append(f"  #{inc['id']:<3} line {inc['first_line']:>7}  {inc['kind']:<11} ranks {ranks:<16} "
                       f"{inc['message']}{cause}")
            if inc.get("repeats"):
                out.append(f"       again at lines {', '.join(str(n) for n in inc['repeats'])}")
            out.extend(f"       line {line:>7}  then: {message}" for line, message in inc["joined"])
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
