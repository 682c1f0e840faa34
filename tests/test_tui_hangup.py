"""An SSH drop, as the kernel does it: the TUI runs on a real pty whose master is closed.

Three ways a terminal goes away: the TUI is the session leader (the kernel sends SIGHUP and
SIGCONT), the TUI is the child of a shell that ignores SIGHUP, and the TUI has no controlling
terminal at all (a wrapper that forwards nothing: only EOF/EIO tell). In each, the process and
the server it launched are gone within 5 s, and the recording is closed as quitting closes it.
"""

from __future__ import annotations

import fcntl
import gzip
import os
import signal
import subprocess
import sys
import termios
import threading
import time

import psutil
import pytest

from tuiapp.server.ports import free_port

pytestmark = [pytest.mark.pty, pytest.mark.slow]

GONE_WITHIN_S = 5.0


def _launch_argv(tmp_path) -> list[str]:
    sim = [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "100", "--port", str(free_port()),
           "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
    return [sys.executable, "-m", "tuiapp", "launch", "--no-preflight", "--telemetry", "off",
            "--record", str(tmp_path / "run.jsonl.gz"), "--log", str(tmp_path / "server.log"), "--", *sim]


class Pty:
    """A pty whose master we read (so the TUI never blocks on output) and then close."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, b"\x30\x00\xa0\x00\x00\x00\x00\x00")  # 48x160
        self.screen = bytearray()
        self.reading = True
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while self.reading:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.screen += data

    def wait_for(self, needle: bytes, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in self.screen:
                return True
            time.sleep(0.1)
        return False

    def hang_up(self) -> None:
        os.close(self.master)


def _spawn(argv: list[str], pty: Pty, *, controlling: bool) -> subprocess.Popen:
    slave = pty.slave

    def child_setup() -> None:
        os.setsid()
        if controlling:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=child_setup,
                            env=env, close_fds=True)
    os.close(slave)
    return proc


def _tuiapp_and_server(root: psutil.Process, timeout_s: float = 60) -> tuple[psutil.Process, psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        procs = [root, *root.children(recursive=True)]
        app = [p for p in procs if "tuiapp" in " ".join(p.cmdline()) and "launch" in p.cmdline()]
        server = [p for p in procs if "tuiapp.sim.server" in p.cmdline()]
        if app and server:
            return app[0], server[0]
        time.sleep(0.2)
    raise AssertionError("tuiapp or its server did not start")


def _gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("how", ["session-leader", "child-of-hup-ignoring-shell", "no-controlling-tty"])
def test_closed_pty_ends_the_tui_and_its_server(tmp_path, how):
    pty = Pty()
    argv = _launch_argv(tmp_path)
    if how == "child-of-hup-ignoring-shell":
        import shlex

        argv = ["sh", "-c", f"trap '' HUP; {shlex.join(argv)}; echo done"]
    proc = _spawn(argv, pty, controlling=how != "no-controlling-tty")
    try:
        app, server = _tuiapp_and_server(psutil.Process(proc.pid))
        assert pty.wait_for(b"per stream", 60), pty.screen[-2000:]
        assert pty.wait_for(b"READY", 60) or pty.wait_for(b"RUNNING", 1)
        time.sleep(1.0)
        pty.hang_up()
        t0 = time.monotonic()
        while time.monotonic() - t0 < GONE_WITHIN_S and not (_gone(app) and _gone(server)):
            time.sleep(0.05)
        took_s = time.monotonic() - t0
        assert _gone(server), f"server still running {took_s:.1f} s after the hang-up"
        assert _gone(app), f"tuiapp still running {took_s:.1f} s after the hang-up ({app.status()})"
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []:
            p.kill()
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    # quitting closes the recording: a complete gzip stream whose last server state is "stopped"
    lines = gzip.decompress((tmp_path / "run.jsonl.gz").read_bytes()).splitlines()
    states = [line for line in lines if b'"kind":"server_state"' in line]
    assert states and b'"state":"stopped"' in states[-1], states[-3:]
    if how == "session-leader":
        assert proc.returncode == 0  # exactly as q: the job was not a failure


def test_sigterm_works_after_the_terminal_is_gone(tmp_path):
    """A TUI whose terminal died takes no output; SIGTERM still ends it (and its server)."""
    pty = Pty()
    proc = _spawn(_launch_argv(tmp_path), pty, controlling=False)
    try:
        app, server = _tuiapp_and_server(psutil.Process(proc.pid))
        assert pty.wait_for(b"per stream", 60)
        # Stop reading: the pty's buffer fills and every write blocks, as on a stalled SSH link.
        pty.reading = False
        time.sleep(3.0)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        while time.monotonic() - t0 < GONE_WITHIN_S and not (_gone(app) and _gone(server)):
            time.sleep(0.05)
        assert _gone(server) and _gone(app), "SIGTERM did not end tuiapp within 5 s"
        pty.hang_up()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
