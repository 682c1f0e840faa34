"""Fixtures several test files share."""

from __future__ import annotations

import pytest

from tuiapp.sim.testserver import FakeSGLang


@pytest.fixture
async def fake_sglang():
    """Start fake SGLang servers with the pacing a test asks for; each is stopped after it."""
    started: list[FakeSGLang] = []

    async def start(**kwargs) -> FakeSGLang:
        srv = FakeSGLang(**kwargs)
        await srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        await srv.stop()


# ---------------------------------------------------------------- processes end with the run
# Every process a test starts must end with the run, also an interrupted one (Ctrl+C, SIGTERM,
# a timeout): a simulator or server left behind holds its port and a core. This process adopts
# its orphaned descendants (PR_SET_CHILD_SUBREAPER: a simulator whose tuiapp died is reparented
# here, not to init), and at the session's end, at exit and on SIGTERM/SIGHUP, whatever is
# still running below it is terminated, then killed.
_PR_SET_CHILD_SUBREAPER = 36
_REAP_WAIT_S = 3.0
_LEFT_KEY = pytest.StashKey[list]()


def _become_subreaper() -> None:
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # not glibc/musl: orphans go to init, as before
            pass


def reap_descendants() -> list[str]:
    """Terminate, then kill, every process below this one; their names, for a report."""
    import psutil

    try:
        left = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    names = []
    for proc in left:
        try:
            names.append(f"{proc.pid} {' '.join(proc.cmdline()[:3])}")
            proc.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(left, timeout=_REAP_WAIT_S)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=_REAP_WAIT_S)
    return names


def _reap_on_signal(signum, _frame) -> None:
    reap_descendants()
    raise KeyboardInterrupt(f"signal {signum}")  # pytest then ends the session as on Ctrl+C


def pytest_configure(config) -> None:
    import atexit
    import signal

    _become_subreaper()
    atexit.register(reap_descendants)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _reap_on_signal)


def pytest_sessionfinish(session, exitstatus) -> None:
    if hasattr(session.config, "workerinput") or not session.config.pluginmanager.has_plugin("dsession"):
        left = reap_descendants()  # a worker or a plain run (xdist's controller still has its workers)
        if left:
            session.config.stash[_LEFT_KEY] = left


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    left = config.stash.get(_LEFT_KEY, [])
    if left:
        terminalreporter.write_line(f"ended {len(left)} process(es) a test left running: {'; '.join(left)}")
