"""Launch a server we own, tell when it is ready, and stop it without leaving orphans.

Lifecycle events (``ServerState``): starting -> ready | failed; stopping -> stopped. A
process that exits on its own publishes failed (with the cause taken from its output) or
stopped (exit code 0 after it was ready). Readiness: the ready line in the output, or
``GET {url}/health`` answering 200 (a server without ``/health``: ``/v1/models`` answering),
whichever comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tuiapp.common.http_clients import DEFAULT_TIMEOUT, async_client
from tuiapp.common.redact import Redactor, known_secrets, redact_argv, remember, secret_values
from tuiapp.common.ticks import until_tick_s
from tuiapp.events import Note, ServerState, ServerStateName, _Event
from tuiapp.server.command import api_key_from, server_host, server_port, server_url
from tuiapp.server.output import OutputConsumer, OutputPump
from tuiapp.server.ports import port_in_use
from tuiapp.server.proctree import ProcessTree
from tuiapp.server.states import readiness

PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size; the default 64 KiB fills in ~30 ms at 8 ranks' burst rate
HEALTH_POLL_S = 0.5
PROGRESS_FIRST_S = 10.0  # a start that takes longer gets a progress line, then one every
PROGRESS_EVERY_S = 30.0
TRACK_DESCENDANTS_S = 1.0  # while starting: ranks and helpers fork now
TRACK_DESCENDANTS_READY_S = 5.0  # once serving the tree rarely changes
KILL_WAIT_S = 5.0  # after SIGKILL: only a process stuck in the kernel takes longer
_EXIT_CLEANUP_TERM_S = 3.0


class LaunchError(Exception):
    """The server could not be started (bad command, port in use); one line for the user."""


class ServerProcess:
    """One server process tree we launched. Use from a single asyncio event loop.

    ``env`` adds to (and overrides) the inherited environment. ``on_output`` receives the
    redacted output chunks in order. With ``output_in_loop`` (the default) it is called on
    the event loop, so a consumer that is not thread-safe (the log watcher, whose ``poll``
    also runs on the loop) needs no locking; the pipe is drained by a thread either way,
    so a busy loop delays delivery, never the server. With ``output_in_loop=False`` it is
    called from the reader thread and must be thread-safe and quick. ``output_consumer``
    (the log watcher) is fed on the reader thread and polled there at its quiet deadlines,
    so server output wakes the event loop only through what the consumer publishes.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        publish: Callable[[_Event], None],
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
        on_output: Callable[[bytes], None] | None = None,
        ready_timeout_s: float = 1800,
        health_url: str | None = None,
        api_key: str | None = None,
        output_in_loop: bool = True,
        client: httpx.AsyncClient | None = None,
        output_consumer: OutputConsumer | None = None,
    ) -> None:
        if not argv:
            raise LaunchError("no server command given")
        self.argv = list(argv)
        self.log_path = Path(log_path) if log_path is not None else None
        self.ready_timeout_s = ready_timeout_s
        self._publish = publish
        self._extra_env = dict(env or {})
        self._on_output = on_output
        self._output_in_loop = output_in_loop
        self._consumer = output_consumer  # fed on the reader thread, quiet deadlines too
        self._url = (health_url or server_url(self.argv)).rstrip("/")
        self._api_key = api_key if api_key is not None else api_key_from(self.argv)
        self._client = client  # the session's client of this server (health poll), if it has one
        self._proc: asyncio.subprocess.Process | None = None
        self._tree: ProcessTree | None = None
        self._pump: OutputPump | None = None
        self._state: ServerStateName | None = None
        self._started_at_s = 0.0
        self._startup_s: float | None = None
        self._ready = asyncio.Event()
        self._stopping = False
        self._finished = asyncio.Event()  # exit handled, final state published
        self._tasks: list[asyncio.Task[None]] = []
        self._loop_output_errors = 0

    # ------------------------------------------------------------------ properties

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    @property
    def startup_s(self) -> float | None:
        return self._startup_s

    @property
    def url(self) -> str:
        return self._url

    @property
    def state(self) -> ServerStateName | None:
        return self._state

    @property
    def command_shown(self) -> str:
        """The command line with secrets masked: safe to print or record."""
        return shlex.join(redact_argv(self.argv))

    def alive_pids(self) -> list[int]:
        """Pids of the server's processes still running (the group and its known descendants)."""
        return self._tree.alive() if self._tree is not None else []

    # ------------------------------------------------------------------ start

    async def start(self) -> None:
        if self._proc is not None:
            raise LaunchError("server already started")
        env = {**os.environ, **self._extra_env}
        env.setdefault("PYTHONUNBUFFERED", "1")  # uvicorn's access log goes to a buffered stdout otherwise
        self._check_executable(env)
        await self._check_port()
        found = [*secret_values(self.argv, env), self._api_key]
        remember(*found)  # the recording, the printer and the summary mask them too
        redactor = Redactor([*found, *known_secrets()])
        log_fd = self._open_log() if self.log_path is not None else None
        read_fd, write_fd = os.pipe()
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        prefix = term_with_parent_prefix()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *prefix, *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
                start_new_session=True,  # own group: one killpg reaches every rank; no terminal SIGINT
                preexec_fn=None if prefix or _LIBC is None else _term_when_parent_dies,
            )
        except OSError as exc:
            os.close(read_fd)
            if log_fd is not None:
                os.close(log_fd)
            raise LaunchError(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        finally:
            os.close(write_fd)
        self._started_at_s = time.monotonic()
        self._tree = ProcessTree(self._proc.pid)
        loop = asyncio.get_running_loop()
        on_output = self._on_output
        if on_output is not None and self._output_in_loop:
            on_output = functools.partial(_call_soon, loop, self._deliver, on_output)
        self._pump = OutputPump(
            read_fd,
            redactor=redactor,
            log_fd=log_fd,
            on_output=on_output,
            on_ready_line=lambda: _call_soon(loop, self._mark_ready, "ready line"),
            consumer=self._consumer,
        )
        self._pump.start()
        self._set_state("starting", pid=self._proc.pid, message=self.command_shown)
        self._tasks = [
            asyncio.create_task(self._watch_exit()),
            asyncio.create_task(self._track_descendants()),
        ]

    def _check_executable(self, env: dict[str, str]) -> None:
        exe = self.argv[0]
        if os.sep in exe:
            found = exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None
        else:
            found = shutil.which(exe, path=env.get("PATH"))
        if found is None:
            raise LaunchError(f"server command not found: {exe}")

    async def _check_port(self) -> None:
        try:
            host, port = server_host(self.argv), server_port(self.argv)
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
        if await asyncio.to_thread(port_in_use, host, port):
            raise LaunchError(
                f"port {port} on {host} is already in use (another server running?); "
                "stop it or pass a different --port"
            )

    def _open_log(self) -> int:
        assert self.log_path is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        return fd

    # ------------------------------------------------------------------ readiness

    @property
    def ready(self) -> bool:
        """Whether the server said it is ready (a flag: safe to read from another thread)."""
        return self._ready.is_set()

    async def wait_ready(self) -> bool:
        """True once ready; False when the server failed or was not ready in time
        (a timeout leaves it running: call :meth:`stop`)."""
        if self._proc is None:
            raise LaunchError("server not started")
        if self._state == "ready":
            return True
        if self._state != "starting":
            return False
        remaining_s = self._started_at_s + self.ready_timeout_s - time.monotonic()
        waiters = {
            asyncio.create_task(self._ready.wait()),
            asyncio.create_task(self._finished.wait()),
            asyncio.create_task(self._poll_health()),
        }
        try:
            await asyncio.wait(waiters, timeout=max(0.0, remaining_s), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiters:
                task.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
        if self._state == "starting":
            self._set_state("failed", pid=self.pid, message=f"not ready after {self.ready_timeout_s:g} s")
        return self._state == "ready"

    async def _poll_health(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            client = self._client
            if client is None:
                client = await stack.enter_async_context(async_client(self._url, api_key=self._api_key))
            next_line_s = PROGRESS_FIRST_S
            while self._state == "starting":
                try:
                    # what "starting" and "ready" mean is one rule, for attach too (server/states.py)
                    why = await readiness(client, self._url, timeout_s=DEFAULT_TIMEOUT)
                    if why is None:
                        self._mark_ready("/health")
                        return
                except httpx.HTTPError as exc:
                    why = f"GET /health: {type(exc).__name__}"
                waited_s = time.monotonic() - self._started_at_s
                if waited_s >= next_line_s and self._state == "starting":
                    # a real start takes minutes: a headless log says it is still waiting, and on what
                    self._publish(Note(level="info", source="launcher", text=(
                        f"waiting for {self._url} to be ready: {why} ({waited_s:.0f} s of"
                        f" {self.ready_timeout_s:g} s, --ready-timeout)")))
                    next_line_s = waited_s + PROGRESS_EVERY_S
                await asyncio.sleep(until_tick_s(HEALTH_POLL_S))  # on the grid: the samplers' wake-ups

    def _mark_ready(self, how: str) -> None:
        if self._state != "starting":
            return
        startup_s = time.monotonic() - self._started_at_s
        if startup_s > self.ready_timeout_s:
            # seen after its deadline (a loop stalled past it while the server came up): it was not
            # ready in time, whichever of the two the loop got to first; wait_ready says so
            return
        self._startup_s = startup_s
        self._set_state("ready", pid=self.pid, startup_s=self._startup_s, message=f"ready ({how})")
        self._ready.set()

    # ------------------------------------------------------------------ exit and stop

    async def _track_descendants(self) -> None:
        assert self._tree is not None
        while self.returncode is None:
            # on the loop: an unchanged tree costs one listing of /proc (well under a ms), less
            # than handing it to a worker thread and back
            self._tree.snapshot()
            serving = self._state in ("ready", "running")
            await asyncio.sleep(until_tick_s(TRACK_DESCENDANTS_READY_S if serving else TRACK_DESCENDANTS_S))

    async def _watch_exit(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        if self._stopping:
            return  # stop() reports
        was_ready = self._state in ("ready", "running")
        # The server died on its own: its ranks must not outlive it.
        await self._terminate(sigint_timeout_s=0.0, sigterm_timeout_s=_EXIT_CLEANUP_TERM_S)
        await self._end_output()
        if self._stopping:
            return
        if code == 0 and was_ready:
            self._set_state("stopped", exit_code=code, message="server exited")
        else:
            cause = self._pump.cause() if self._pump is not None else ""
            self._set_state("failed", exit_code=code, message=cause or f"exited with code {code}")
        self._finished.set()

    async def stop(self, *, sigint_timeout_s: float = 10, sigterm_timeout_s: float = 10) -> int | None:
        """SIGINT, then SIGTERM, then SIGKILL to the whole process group (and descendants
        that left it), waiting between; returns the server's exit code (None if never started)."""
        if self._proc is None:
            return None
        if self._finished.is_set() or self._stopping or self.returncode is not None:
            # Already stopped, being stopped, or exited on its own (_watch_exit cleans up).
            await self._finished.wait()
            return self.returncode
        self._stopping = True
        self._set_state("stopping", pid=self.pid)
        await self._terminate(sigint_timeout_s=sigint_timeout_s, sigterm_timeout_s=sigterm_timeout_s)
        code = await self._proc.wait()
        await self._end_output()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        survivors = self.alive_pids()
        message = f"processes still running after SIGKILL: {survivors}" if survivors else ""
        self._set_state("stopped", exit_code=code, message=message)
        self._finished.set()
        return code

    async def _terminate(self, *, sigint_timeout_s: float, sigterm_timeout_s: float) -> None:
        tree = self._tree
        assert tree is not None
        await asyncio.to_thread(tree.snapshot)
        steps = [(signal.SIGINT, sigint_timeout_s), (signal.SIGTERM, sigterm_timeout_s), (signal.SIGKILL, KILL_WAIT_S)]
        for sig, wait_s in steps:
            if not await asyncio.to_thread(tree.alive):
                return
            if wait_s <= 0 and sig != signal.SIGKILL:
                continue
            await asyncio.to_thread(tree.snapshot)  # catch ranks forked since the last look
            tree.signal(sig)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                if not await asyncio.to_thread(tree.alive):
                    return

    async def _end_output(self) -> None:
        if self._pump is not None:
            # Every writer is gone, so end-of-file is near; a writer we could not reach
            # (escaped the tree) must not hang us.
            await asyncio.to_thread(self._pump.join, 2.0)

    async def wait(self) -> int:
        """Wait until the server has exited and its exit was handled; its exit code."""
        if self._proc is None:
            raise LaunchError("server not started")
        await self._proc.wait()
        await self._finished.wait()
        code = self._proc.returncode
        assert code is not None
        return code

    # ------------------------------------------------------------------ events

    def _set_state(self, state: ServerStateName, **fields: object) -> None:
        self._state = state
        self._publish(ServerState(state=state, url=self._url, **fields))  # type: ignore[arg-type]

    def _deliver(self, on_output: Callable[[bytes], None], data: bytes) -> None:
        try:
            on_output(data)
        except Exception:  # a broken sink must not break the loop; the log file has it all
            self._loop_output_errors += 1

    @property
    def output_errors(self) -> int:
        """How often ``on_output`` raised (the output kept flowing to the log file)."""
        return self._loop_output_errors + (self._pump.output_errors if self._pump is not None else 0)


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@functools.cache
def term_with_parent_prefix() -> tuple[str, ...]:
    """``setpriv --pdeathsig TERM --`` where util-linux's setpriv has it, else ().

    The parent-death signal is set in the child either way; setpriv does it after the
    fork and then execs the server in place (same pid), so no Python runs in the child.
    A preexec_fn makes subprocess fork() instead of vfork(): the fork copies the page
    tables and afterwards every page the app writes takes a copy-on-write fault (the
    headless demo's 8 launches: 26,000 -> 9,300 minor faults, 0.1-0.2 s of its ~1.2 s).
    """
    if _LIBC is None or (setpriv := shutil.which("setpriv")) is None:
        return ()
    try:  # --pdeathsig came with util-linux 2.33 (2018); older ones reject it before --help
        ok = subprocess.run([setpriv, "--pdeathsig", "TERM", "--help"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return (setpriv, "--pdeathsig", "TERM", "--") if ok else ()


def _term_when_parent_dies() -> None:
    """In the child before exec: SIGTERM when tuiapp dies, even by SIGKILL, so a killed
    monitor never leaves a server holding 8 GPUs (SGLang's own ranks follow their parent)."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: object) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
        loop.call_soon_threadsafe(callback, *args)
