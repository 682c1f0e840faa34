"""The guarded driver never blocks on Textual's bounded writer queue once the terminal is gone."""

from __future__ import annotations

import errno
import signal
import threading
import time

import pytest
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from tuiapp.tui.terminal_driver import GuardedLinuxDriver, TerminalFile


class _App:
    """What Driver.__init__ needs of an app."""


@pytest.fixture(autouse=True)
def _keep_signal_handlers():
    # LinuxDriver installs SIGTSTP/SIGCONT handlers: give pytest its own back
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


class DeadTty:
    def write(self, _text: str) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def fileno(self) -> int:
        return 2


class StuckTty:
    """A terminal that takes no output (a stalled link): every write blocks."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def write(self, _text: str) -> None:
        self.release.wait()

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return 2


def _driver(tty) -> GuardedLinuxDriver:
    driver = GuardedLinuxDriver(_App())
    gone: list[str] = []
    driver.on_gone = gone.append
    driver._file = TerminalFile(tty, driver._output_failed)
    driver._writer_thread = WriterThread(driver._file)
    driver._writer_thread.start()
    driver.gone = gone  # type: ignore[attr-defined]
    return driver


def _writes_return(driver: GuardedLinuxDriver, n: int, within_s: float) -> bool:
    done = threading.Event()

    def write_all() -> None:
        for i in range(n):
            driver.write(f"frame {i}\n")
        driver.close()
        done.set()

    threading.Thread(target=write_all, daemon=True).start()
    return done.wait(within_s)


async def test_a_dead_terminal_drops_output_and_says_so_once():
    driver = _driver(DeadTty())
    assert _writes_return(driver, 10 * MAX_QUEUED_WRITES, within_s=5)
    assert driver.terminal_gone and len(driver.gone) == 1 and "Input/output error" in driver.gone[0]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # it dies on purpose
async def test_a_writer_thread_that_died_does_not_block_writes():
    class Boom(DeadTty):
        def write(self, _text: str) -> None:
            raise RuntimeError("writer thread dies")

    driver = GuardedLinuxDriver(_App())
    driver._writer_thread = WriterThread(Boom())  # unguarded file: the thread dies on its first write
    driver._writer_thread.start()
    driver.write("x")
    driver._writer_thread.join(2)
    assert not driver._writer_thread.is_alive()
    assert _writes_return(driver, 10 * MAX_QUEUED_WRITES, within_s=5)


async def test_a_stalled_terminal_blocks_until_abandoned_then_lets_go():
    tty = StuckTty()
    driver = _driver(tty)
    t0 = time.monotonic()
    threading.Timer(1.0, driver.abandon).start()  # SIGTERM arrives
    assert _writes_return(driver, 10 * MAX_QUEUED_WRITES, within_s=6)
    assert time.monotonic() - t0 >= 0.9  # back-pressure held while nobody asked to stop
    assert driver.terminal_gone  # close() found the writer stuck: later prints must not block
    tty.release.set()


async def test_sigcont_without_a_suspension_does_not_resume():
    driver = GuardedLinuxDriver(_App())
    resumed: list[bool] = []
    driver.resume_application_mode = lambda: resumed.append(True)  # type: ignore[method-assign]
    driver._sigcont_application()  # the kernel's SIGCONT that comes with a hang-up's SIGHUP
    assert resumed == []


def _input_thread_on_a_pty(monkeypatch):
    """The guarded input loop reading a fresh pty, with the select timeouts it asked for."""
    import os
    import pty
    import selectors
    import tty

    master, slave = pty.openpty()
    tty.setraw(slave)  # bytes as they come, as in application mode
    driver = GuardedLinuxDriver(_App())
    driver.fileno, driver.input_tty = slave, True
    keys: list[object] = []
    driver.process_message = keys.append
    timeouts: list[float | None] = []
    select = selectors.SelectSelector.select

    def recording(self, timeout=None):
        timeouts.append(timeout)
        return select(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", recording)
    thread = threading.Thread(target=driver._run_input_thread, daemon=True)
    thread.start()
    return driver, thread, master, slave, keys, timeouts, os


@pytest.mark.pty
async def test_a_key_is_read_and_exit_ends_the_input_thread(monkeypatch):
    driver, thread, master, slave, keys, timeouts, os = _input_thread_on_a_pty(monkeypatch)
    try:
        os.write(master, b"q")
        for _ in range(200):
            if keys:
                break
            time.sleep(0.01)
        assert keys, "a key read"
        driver.exit_event.set()  # as disable_input does
        thread.join(5.0)
        assert not thread.is_alive()
        assert driver.gone_reason is None
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.pty
async def test_a_lone_escape_still_times_out_into_a_key(monkeypatch):
    driver, thread, master, slave, keys, timeouts, os = _input_thread_on_a_pty(monkeypatch)
    try:
        os.write(master, b"\x1b")  # Escape or the start of a sequence: the parser's timeout decides
        for _ in range(300):
            if keys:
                break
            time.sleep(0.01)
        assert keys, "the escape key came out of the parser's timeout"
        driver.exit_event.set()
        thread.join(2.0)
        assert not thread.is_alive()
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.pty
async def test_a_hang_up_still_ends_the_input_thread(monkeypatch):
    driver, thread, master, slave, keys, timeouts, os = _input_thread_on_a_pty(monkeypatch)
    gone: list[str] = []
    driver.on_gone = gone.append
    os.close(master)  # the terminal's side goes away: reads of the slave fail with EIO
    thread.join(2.0)
    os.close(slave)
    assert not thread.is_alive() and gone and driver.terminal_gone
