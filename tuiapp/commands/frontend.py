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
    previous = use_fast_event_loop()
    try:
        if headless:
            return asyncio.run(run_headless(session))
        from tuiapp.tui.app import run_app  # the only place that pulls in Textual

        return run_app(session, theme=theme, screenshot_dir=screenshot_dir)
    finally:
        if previous is not None:
            asyncio.set_event_loop_policy(previous)  # a caller's own loops stay its own


def use_fast_event_loop() -> asyncio.AbstractEventLoopPolicy | None:
    """uvloop's event loop where it is installed (not on Windows): the benchmark stream
    costs one loop turn per socket read, one read per token, and uvloop's turn costs a
    third less CPU than asyncio's own (1.06% vs 1.61% of a core for one 90 tok/s stream).
    Set as the policy so Textual's own asyncio.run gets it too; returns the policy it
    replaced (None: nothing changed)."""
    try:
        import uvloop
    except ImportError:
        return None
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return previous


async def run_headless(session: Session) -> int:
    from tuiapp.record.printer import Printer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # A headless job must outlive the SSH session that started it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    printer = Printer(sys.stdout)
    printing = asyncio.create_task(printer.run(session.bus.subscribe("printer", maxlen=100_000)))
    try:
        await session.run(stop)
    finally:
        await asyncio.gather(printing, return_exceptions=True)
        _print_last(printer.summary(interrupted=stop.is_set()), gone=printer.stream_error is not None)
    return session.exit_code


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
