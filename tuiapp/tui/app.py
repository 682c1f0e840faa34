"""The dashboard app: the session runs in a worker, the bus feeds the dashboard.

``run_app(session, theme=...)`` is the entry point; ``DashboardApp(session, theme=...)`` is
the same app for ``run_test`` and snapshot tests.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker

from tuiapp.controls import SessionView
from tuiapp.events import DENSE_KINDS
from tuiapp.tui import textual_private
from tuiapp.tui.screens.dashboard import TOGGLABLE, DashboardScreen
from tuiapp.tui.screens.details import ConfirmScreen
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.terminal_driver import GuardedLinuxDriver
from tuiapp.tui.theme_files import (
    DEFAULT_THEME,
    ThemeFileError,
    is_theme_path,
    layout_paths,
    load_all_themes,
    load_theme,
)

SPEEDS = (1, 2, 4, 8, 16, 32, 64)
SEEK_S = 10.0
_LIVE_ACTIONS = {"pause_resume", "restart_trial", "stop_server"}
_SERVER_UP = ("starting", "ready", "running")


class DashboardApp(App[int]):
    TITLE = "tuiapp"
    CSS_PATH = layout_paths()
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("space", "replay_toggle", "Play", priority=True),
        Binding("plus,equals_sign", "replay_speed(2)", "Speed", key_display="+/-"),
        Binding("minus", "replay_speed(0.5)", "Slower", show=False),
        Binding("right", "replay_step", "Step", key_display="←→", priority=True),
        Binding("left", "replay_seek(-10)", "Back 10s", show=False, priority=True),
        Binding("n", "replay_next_alert", "Alert"),
        Binding("p", "pause_resume", "Pause"),
        Binding("r", "restart_trial", "Restart"),
        Binding("s", "stop_server", "Stop"),
        Binding("l", "open_log", "Log"),
        Binding("c", "open_campaign", "Campaign", show=False),
        Binding("e", "errors_only", "Errors"),
        Binding("t", "next_theme", "Theme"),
        Binding("1", "toggle_panel('perf')", "Panels", key_display="1-5"),
        *(Binding(str(i), f"toggle_panel('{name}')", show=False)
          for i, name in enumerate(list(TOGGLABLE)[1:], start=2)),
    ]

    def __init__(self, session: SessionView, *, theme: str | None = None) -> None:
        super().__init__()
        self.session = session
        self.store = DashboardStore()
        self.animation_level = "none"
        # Subscribe before any source starts so no event is missed. Samples, log lines, server
        # figures and requests are only painted by the next frame: they wait for it (the
        # dashboard sets when) instead of waking the reader per burst.
        self.events = session.bus.subscribe("tui", maxlen=100_000, lazy_kinds=DENSE_KINDS)
        # What the headless printer would say at the end, printed after q (attach and launch
        # used to end silently): the printer's summary, fed by the dashboard with every event
        # it takes in (a subscription of its own cost a wake-up per burst).
        from tuiapp.record.printer import NullStream, Printer

        self.summary_printer = Printer(NullStream())
        from tuiapp.common.errors import UsageError

        try:
            file_themes = load_all_themes()
            name = theme or DEFAULT_THEME
            if is_theme_path(name):  # --theme PATH.toml: that palette, chosen
                chosen = load_theme(Path(name).expanduser())
                file_themes = [t for t in file_themes if t.name != chosen.name] + [chosen]
                name = chosen.name
        except ThemeFileError as exc:
            raise UsageError(f"theme: {exc}") from exc
        self.file_themes = [t.name for t in file_themes]
        for file_theme in file_themes:
            self.register_theme(file_theme)
        if name not in self.available_themes:
            raise UsageError(f"unknown theme {name!r}; choose from {', '.join(self.file_themes)} "
                             "or give a palette file (--theme PATH.toml)")
        self.theme = name
        self._stop = asyncio.Event()
        self._sources: Worker | None = None
        self._quitting = False

    screenshot_dir: Path | None = None  # None: the current directory

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's "Save screenshot": Textual writes to ~/Downloads, which a server
        rarely has (the save failed); here it goes to --screenshot-dir or the current directory."""
        target = path or str(self.screenshot_dir or Path.cwd())
        return super().deliver_screenshot(filename, target, time_format)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {"pcie-rx": "#3A9AD9", "pcie-tx": "#F0A202"}

    def get_default_screen(self) -> Screen:
        return DashboardScreen(self.store, self.session, self.events)

    @property
    def dashboard(self) -> DashboardScreen:
        return self.screen_stack[0]  # type: ignore[return-value]

    handle_signals = False  # run_app sets it; tests leave the test loop's signals alone

    def on_mount(self) -> None:
        if self.handle_signals:
            self._loop = asyncio.get_running_loop()
            # SSH hung up or someone sent TERM: stop what we launched, as quitting would. A plain
            # handler, not loop.add_signal_handler: it must run even while the main thread waits on
            # a terminal that takes no output, and it tells the driver to stop waiting.
            for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
            driver = textual_private.app_driver(self)
            if isinstance(driver, GuardedLinuxDriver):
                driver.on_gone = self._on_terminal_gone
                if driver.terminal_gone:  # it died before we were listening
                    self._on_terminal_gone(driver.gone_reason or "terminal gone")
        self._sources = self.run_worker(self.session.run(self._stop), group="sources",
                                        exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._sources and event.worker.is_finished and not self._quitting:
            code = self.session.exit_code
            self.notify(f"session finished (exit code {code}); q quits", severity="error" if code else "information",
                        timeout=30)

    # ------------------------------------------------------------------ quitting

    def _server_running(self) -> bool:
        state = self.store.server_state
        return state is not None and state.state in _SERVER_UP

    async def action_quit(self) -> None:
        controls = self.session.controls
        if controls is not None and controls.owns_server and self._server_running():
            def answered(yes: bool | None) -> None:
                if yes:
                    self._begin_shutdown()

            self.push_screen(ConfirmScreen("The server we launched is running. Stop it and quit?"), answered)
        else:
            self._begin_shutdown()

    def _on_signal(self, signum: int, _frame: object) -> None:
        driver = textual_private.app_driver(self)
        if isinstance(driver, GuardedLinuxDriver):
            driver.abandon()
        _start_backstop()
        try:
            self._loop.call_soon_threadsafe(self._begin_shutdown)
        except RuntimeError:  # the loop is closed: the app is already gone
            pass

    def _on_terminal_gone(self, reason: str) -> None:
        """Called once, from any thread, when the terminal is gone (EOF/EIO, a closed pty)."""
        _silence_dead_terminal(textual_private.app_driver(self))
        _start_backstop()
        try:
            self._loop.call_soon_threadsafe(self._terminal_gone, reason)
        except RuntimeError:  # the loop is closed: we are past the shutdown already
            pass

    def _terminal_gone(self, reason: str) -> None:
        from tuiapp.events import Note

        self.session.bus.publish(Note(level="warning", text=f"{reason}: stopping as if q was pressed",
                                      source="tui"))
        self._begin_shutdown()

    def _begin_shutdown(self) -> None:
        if not self._quitting:
            self._quitting = True
            self.notify("stopping…", timeout=30)
            self.run_worker(self._stop_and_exit(), group="shutdown")

    async def _stop_and_exit(self) -> None:
        """Stop the session (it stops a server we launched and closes the recording), exit."""
        self._stop.set()
        await _finished(self._sources)
        self.exit(0)

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _LIVE_ACTIONS:
            return self.session.controls is not None
        if action.startswith("replay_"):
            return self.session.replay is not None
        if action in ("errors_only", "toggle_panel", "open_log"):
            return isinstance(self.screen, DashboardScreen)
        return True

    def closing_summary(self) -> str:
        """The session's summary for the terminal after the app is gone: the printer's, with
        whatever was still queued for it."""
        for event in self.events.drain():  # what came after the dashboard's last frame
            self.summary_printer.handle(event)
        return self.summary_printer.summary(interrupted=self._quitting and not self.store.finished)

    def action_pause_resume(self) -> None:
        controls = self.session.controls
        paused = self.store.bench_state is not None and self.store.bench_state.state == "paused"
        if paused:
            controls.resume_bench()
            self.notify("benchmark loop: resume requested")
        else:
            controls.pause_bench()
            self.notify("benchmark loop: pause requested")

    def action_restart_trial(self) -> None:
        self._confirmed("Restart the current trial?", self.session.controls.restart_trial, "restart requested")

    def action_stop_server(self) -> None:
        self._confirmed("Stop the server?", self.session.controls.stop_server, "stop requested")

    def _confirmed(self, question: str, act, done: str) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                act()
                self.notify(done)

        self.push_screen(ConfirmScreen(question), answered)

    def action_open_log(self) -> None:
        from tuiapp.tui.screens.log_view import LogScreen

        self.push_screen(LogScreen(self.store))

    def action_open_campaign(self) -> None:
        """Trials as Slurm jobs: every one in flight (tuiapp.tui.screens.campaign)."""
        if not self.store.trial_jobs:
            self.notify("no Slurm jobs in this session (trials --slurm)")
            return
        from tuiapp.tui.screens.campaign import CampaignScreen

        self.push_screen(CampaignScreen(self.store))

    def action_errors_only(self) -> None:
        from tuiapp.tui.widgets.log_tail import LogTail

        self.dashboard.set_errors_only(not self.dashboard.query_one(LogTail).errors_only)

    def action_toggle_panel(self, panel_id: str) -> None:
        self.dashboard.toggle_panel(panel_id)

    def action_next_theme(self) -> None:
        names = self.file_themes
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"theme {self.theme}")

    def action_replay_toggle(self) -> None:
        replay = self.session.replay
        replay.pause() if replay.playing else replay.play()

    def action_replay_speed(self, factor: float) -> None:
        replay = self.session.replay
        wanted = replay.speed * factor
        replay.set_speed(float(min(SPEEDS, key=lambda s: abs(s - wanted))))

    def action_replay_step(self) -> None:
        replay = self.session.replay
        if replay.playing:
            self.action_replay_seek(SEEK_S)
        else:
            replay.step()

    def action_replay_seek(self, delta_s: float) -> None:
        replay = self.session.replay
        replay.seek(min(max(0.0, replay.position_s + delta_s), replay.duration_s))

    def action_replay_next_alert(self) -> None:
        self.session.replay.next_alert()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, DashboardScreen):
            for panel_id, label in TOGGLABLE.items():
                yield SystemCommand(f"Toggle panel: {label}", f"Show or hide the {label} panel",
                                    lambda p=panel_id: self.action_toggle_panel(p))
            yield SystemCommand("Open log", "The whole log, scrollable", self.action_open_log)
            yield SystemCommand("Log tail: errors only", "Filter the log tail", self.action_errors_only)
        if self.session.controls is not None:
            yield SystemCommand("Pause/resume benchmark loop", "", self.action_pause_resume)
            yield SystemCommand("Restart trial", "", self.action_restart_trial)
            yield SystemCommand("Stop server", "", self.action_stop_server)
        if self.session.replay is not None:
            yield SystemCommand("Replay: next alert", "Seek to just after the next alert",
                                self.action_replay_next_alert)


async def _finished(worker: Worker | None) -> None:
    """Wait for a worker to end, whatever its outcome (its errors are its own to report)."""
    if worker is None or worker.is_finished:
        return
    try:
        await worker.wait()
    except Exception:  # WorkerFailed, WorkerCancelled, TimeoutError: nothing left to wait for
        pass


# A stop that has not finished this long after a signal or a hang-up is stuck (the server's own
# escalation INT -> TERM -> KILL takes 20 s at most); the server gets SIGTERM from the kernel
# (PR_SET_PDEATHSIG) when we go.
BACKSTOP_S = 45.0
_backstop: threading.Thread | None = None


def _start_backstop() -> None:
    global _backstop
    if _backstop is None:
        _backstop = threading.Thread(target=_backstop_exit, name="tuiapp-backstop", daemon=True)
        _backstop.start()


def _backstop_exit() -> None:
    time.sleep(BACKSTOP_S)
    os._exit(1)


def _silence_dead_terminal(driver: object) -> None:
    """Point fds 0-2 that are the dead terminal at /dev/null, so whatever prints after (Textual's
    exit, our own "server log:" line, the interpreter's final flush) neither fails nor blocks."""
    try:
        dead = os.fstat(driver.fileno if isinstance(driver, GuardedLinuxDriver) else 0)
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in (0, 1, 2):
        try:
            if os.path.samestat(os.fstat(fd), dead):
                os.dup2(devnull, fd)
        except OSError:
            pass
    os.close(devnull)


def run_app(session: SessionView, *, theme: str | None = None, screenshot_dir: Path | None = None) -> int:
    """Run the dashboard in this terminal until the user quits; returns the exit code."""
    app = DashboardApp(session, theme=theme)
    app.screenshot_dir = screenshot_dir
    app.handle_signals = True
    if os.name == "posix" and textual_private.fast("driver"):
        app.driver_class = GuardedLinuxDriver
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    try:
        app.run()
    finally:
        for sig, handler in previous.items():  # ours point at an app that is gone
            signal.signal(sig, handler)
    driver = textual_private.app_driver(app)
    if not (isinstance(driver, GuardedLinuxDriver) and driver.terminal_gone):
        try:
            print(app.closing_summary(), flush=True)
        except (OSError, ValueError):  # the terminal went with the app
            pass
    return app.return_code or session.exit_code
