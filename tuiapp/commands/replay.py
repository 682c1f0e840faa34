"""tuiapp replay FILE: a recording in the same dashboard, or its summary on stdout."""

from __future__ import annotations

import argparse

from tuiapp.commands import metrics_args, screenshots

HELP = "replay a recording in the dashboard (pause, speed x1-x64, seek, next alert), or print its summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a recording (.jsonl or .jsonl.gz) written by --record")
    parser.add_argument("--headless", action="store_true", help="no UI: print the progress lines and the summary")
    parser.add_argument("--summary", action="store_true", help="with --headless: print only the run summary")
    parser.add_argument("--follow", action="store_true", help="keep reading a recording that is still being written")
    parser.add_argument("--speed", type=float, default=1.0, help="playback speed, 1 to 64 (default 1)")
    parser.add_argument("--theme", help="UI theme")
    screenshots.add_argument(parser)
    metrics_args.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from tuiapp.common.errors import UsageError
    from tuiapp.record.reading import RecordingError

    if not 1.0 <= args.speed <= 64.0:
        raise UsageError("--speed must be between 1 and 64")
    if args.summary and not args.headless:
        raise UsageError("--summary needs --headless")
    try:
        if args.headless:
            return _headless(args)
        return _tui(args)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    # `replay --headless | head`: a broken pipe is tuiapp.cli.main's to end quietly


def _headless(args: argparse.Namespace) -> int:
    import signal
    import sys
    import time

    from tuiapp.record.printer import NullStream, Printer
    from tuiapp.record.reading import RecordingIndex

    index = RecordingIndex(args.file)
    printer = Printer(NullStream() if args.summary else sys.stdout)
    endpoint = metrics_args.start(args)
    stop: list[int] = []
    if args.follow or endpoint is not None:
        # Ctrl-C or a TERM ends following (or serving) with the summary, as a live job would.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, _frame: stop.append(signum))
    try:
        done = 0
        while True:
            if not args.follow:
                index.finish()  # a whole last line that lacked its newline counts too
            for i in range(done, len(index)):
                event = index.event(i)
                if event is not None:
                    printer.handle(event)
                    if endpoint is not None:
                        endpoint.apply(event)
            done = len(index)
            if not args.follow or stop:
                break
            while not stop and index.poll() == 0:
                time.sleep(0.25)
        print(printer.summary(), flush=True)
        if index.skipped_lines:
            print(f"tuiapp replay: {index.skipped_lines} corrupt or truncated lines skipped", file=sys.stderr)
        if endpoint is not None:
            # a post-mortem: the recording's figures stay up for Prometheus until Ctrl-C or TERM
            print(f"serving the recording's figures at {endpoint.url} (Ctrl-C ends)", flush=True)
            while not stop:
                time.sleep(0.2)
    finally:
        index.close()
        if endpoint is not None:
            endpoint.close()
    return 0


def _tui(args: argparse.Namespace) -> int:
    from tuiapp.commands.frontend import run as run_session
    from tuiapp.record.replay import ReplaySource
    from tuiapp.session import Session

    replay = ReplaySource(args.file, follow=args.follow, speed=args.speed)
    session = Session(
        title=f"replay: {replay.title}", sources=[replay.run], replay=replay, header=dict(replay.header)
    )
    session.metrics = metrics_args.start(args)
    try:
        return run_session(session, headless=False, theme=args.theme, screenshot_dir=args.screenshot_dir)
    finally:
        replay.close()
