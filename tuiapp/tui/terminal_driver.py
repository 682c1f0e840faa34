"""Textual's Linux driver, made to survive a terminal that goes away (an SSH drop, a closed pty).

Textual 8's driver hangs for ever when its terminal dies: the kernel sends SIGHUP and SIGCONT,
its SIGCONT handler resumes application mode on the dead tty although nothing was suspended,
the new writer thread dies at once on ``EIO``, and the exit path then blocks in ``Queue.put``
on a bounded queue that nobody drains (and the asyncio SIGTERM handler never gets to run).
Without a SIGHUP at all (a parent that ignores it, ``ssh -t host cmd``), reads return EOF/EIO
and writes EIO, and the input thread spins.

:class:`GuardedLinuxDriver` fixes each of these at the boundary, without copying Textual:

* the writer thread writes to a :class:`TerminalFile` that turns ``EIO``/``EPIPE`` into
  "terminal gone" and drops what comes after, so the thread never dies and the queue drains;
* ``write`` never blocks on a dead or departed writer thread, and stops waiting once
  :meth:`abandon` was called (a signal handler calls it, so SIGTERM works with a stuck tty);
* SIGCONT resumes only after a real suspension (Ctrl+Z);
* the input thread stops on EOF/EIO of a tty instead of spinning or panicking;
* ``on_gone`` (given by the app) is called once, from whichever thread saw it first.
"""

from __future__ import annotations

import errno
import os
import queue
import selectors
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

from tuiapp.tui import textual_private

# errno values that mean the terminal (or whatever fd 0/2 pointed to) is gone for good
GONE_ERRNOS = frozenset({errno.EIO, errno.EPIPE, errno.EBADF, errno.ENXIO, errno.ECONNRESET})
_PUT_WAIT_S = 0.25
_POLL_S = 0.1  # Textual's select timeout


class TerminalFile:
    """The stream Textual's writer thread writes to: errors that mean "gone" end output quietly."""

    def __init__(self, file: IO[str], gone: Callable[[BaseException], None]) -> None:
        self._file = file
        self._gone = gone
        self.dead = False

    def _guard(self, op: Callable[..., Any], *args: Any) -> None:
        if self.dead:
            return
        try:
            op(*args)
        except (OSError, ValueError) as exc:  # ValueError: the file was closed under us
            if isinstance(exc, OSError) and exc.errno not in GONE_ERRNOS:
                raise
            self.dead = True
            self._gone(exc)

    def write(self, text: str) -> None:
        self._guard(self._file.write, text)

    def flush(self) -> None:
        self._guard(self._file.flush)

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return not self.dead


class GuardedLinuxDriver(LinuxDriver):
    """LinuxDriver that ends cleanly, and tells the app, when its terminal goes away."""

    on_gone: Callable[[str], None] | None = None  # set by the app before run()

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._gone_lock = threading.Lock()
        self.gone_reason: str | None = None
        self._abandoned = threading.Event()
        self._suspended = False
        self._file = TerminalFile(self._file, self._output_failed)

    # ---------------------------------------------------------------- terminal gone

    @property
    def terminal_gone(self) -> bool:
        return self.gone_reason is not None

    def _output_failed(self, exc: BaseException) -> None:
        self.mark_gone(f"terminal write failed: {exc}")

    def mark_gone(self, reason: str) -> None:
        with self._gone_lock:
            if self.gone_reason is not None:
                return
            self.gone_reason = reason
        self._abandoned.set()
        self._file.dead = True
        callback = self.on_gone
        if callback is not None:
            callback(reason)

    def abandon(self) -> None:
        """Stop waiting for the terminal: called from a signal handler (SIGTERM, SIGHUP)."""
        self._abandoned.set()

    # ---------------------------------------------------------------- output

    def write(self, data: str) -> None:
        writer = textual_private.writer_thread(self)
        if writer is None or self._file.dead:
            return
        pending = textual_private.writer_queue(writer)
        if pending is None:  # a Textual without the bounded queue: nothing to guard
            writer.write(data)
            return
        # A full queue is back-pressure from a slow terminal; it is only worth waiting for
        # while the writer thread lives and nobody asked us to give up (then output is dropped).
        while writer.is_alive() and not self._file.dead:
            try:
                if self._abandoned.is_set():
                    pending.put_nowait(data)
                else:
                    pending.put(data, timeout=_PUT_WAIT_S)
                return
            except queue.Full:
                if self._abandoned.is_set():
                    return

    def close(self) -> None:
        writer = textual_private.writer_thread(self)
        if writer is None:
            return
        wait_s = 0.5 if self._abandoned.is_set() else 2.0
        try:
            textual_private.writer_queue(writer).put(None, timeout=wait_s)
        except (queue.Full, AttributeError):
            pass
        writer.join(timeout=wait_s)
        if writer.is_alive():
            # Stuck in a write the terminal never takes (a stalled link): it is as good as gone,
            # and whatever prints after us must not block on it either.
            self.mark_gone("terminal takes no output")

    # ---------------------------------------------------------------- suspend / resume

    def _sigtstp_application(self, *args: Any) -> None:
        self._suspended = True
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: Any) -> None:
        # The kernel sends SIGCONT with the SIGHUP of a hang-up: resuming then would start
        # application mode on a dead tty. Only a Ctrl+Z is followed by a resume.
        if not self._suspended or self.terminal_gone:
            return
        self._suspended = False
        super()._sigcont_application(*args)

    # ---------------------------------------------------------------- input

    def _run_input_thread(self) -> None:
        try:
            self.run_input_thread()
        except OSError as exc:
            if exc.errno not in GONE_ERRNOS:
                raise
            self.mark_gone(f"terminal read failed: {exc}")

    def run_input_thread(self) -> None:
        """Textual's input loop, except that end-of-file on a tty (a hang-up: every read returns
        b"" and select says readable, so Textual's loop would spin) ends it and the session."""
        if not self.input_tty:
            super().run_input_thread()
            return
        exit_event = self.exit_event
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = textual_private.private("XTermParser")(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        try:
            while not exit_event.is_set():
                # Textual's timeout: the exit flag is polled, and a lone ESC times out into a key
                for _key, mask in selector.select(_POLL_S):
                    if not mask & selectors.EVENT_READ:
                        continue
                    data = os.read(self.fileno, 1024 * 4)
                    if not data:
                        self.mark_gone("terminal closed (end of input)")
                        return
                    for event in parser.feed(decode(data)):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, textual_private.private("ParseError")):
                pass
