"""The top floor picks the frontend: the dashboard in this terminal, or plain lines (headless).

Each frontend subscribes its own sink and then runs the session (which owns the recorder).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from tuiapp.session import Session


def run(session: Session, *, headless: bool, theme: str | None = None, screenshot_dir: Path | None = None) -> int:
    # asyncio's own loop, not uvloop: uvloop costs a third less CPU per socket read, but a
    # headless soak at concurrency 4 grew 4.0 MB in 9 min on it against 1.75 MB on asyncio's
    # loop, side by side (benchmarks/soak_memory.py); flat memory in a long job comes first.
    if headless:
        return asyncio.run(run_headless(session))
    from tuiapp.tui.app import run_app  # the only place that pulls in Textual

    return run_app(session, theme=theme, screenshot_dir=screenshot_dir)


async def run_headless(session: Session) -> int:
    from tuiapp.common.errors import EXIT_INTERRUPTED
    from tuiapp.record.printer import Printer

    stop = asyncio.Event()
    received: list[int] = []

    def on_signal(sig: int) -> None:
        # the session stops as on quit, and keeps what it measured; Ctrl-C then exits 130
        received.append(sig)
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    # A headless job must outlive the SSH session that started it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    printer = Printer(sys.stdout)
    from tuiapp.events import DENSE_KINDS

    # It prints runs, states, alerts and notes as they come; samples and requests it counts
    # (GPUs get a line every 10 s), so they need not wake it one burst at a time.
    sub = session.bus.subscribe("printer", maxlen=100_000, lazy_kinds=DENSE_KINDS)
    printing = asyncio.create_task(printer.run(sub))
    try:
        await session.run(stop)
    finally:
        await asyncio.gather(printing, return_exceptions=True)
        _print_last(printer.summary(interrupted=stop.is_set()), gone=printer.stream_error is not None)
    return EXIT_INTERRUPTED if signal.SIGINT in received else session.exit_code


def _print_last(text: str, *, gone: bool) -> None:
    """The summary of a job whose terminal may be gone (an SSH drop): an EIO or a broken pipe
    must not turn a job that succeeded into exit 1 with a traceback."""
    from tuiapp.common.stdio import stdout_gone

    if not gone:
        try:
            print(text, flush=True)
            return
        except (OSError, ValueError):
            pass
    stdout_gone()  # and whatever the command prints after this goes nowhere, quietly
