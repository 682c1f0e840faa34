"""The fast paths on Textual's internals: checked at start, switched off by TUIAPP_TEXTUAL_FAST,
and the dashboard with them off shows what it shows with them on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import idle, paint_in_slices  # tests/ is on the path
from textual.drivers.linux_driver import LinuxDriver

from tuiapp.commands.preview import read_events
from tuiapp.session import Session
from tuiapp.tui import banded_update, textual_private
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.terminal_driver import GuardedLinuxDriver
from tuiapp.tui.widgets.panel import Panel

EVENTS = read_events(Path(__file__).parent / "data" / "tui" / "dashboard.jsonl")


def probe(env_value: str | None, code: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != textual_private.FAST_ENV}
    if env_value is not None:
        env[textual_private.FAST_ENV] = env_value
    script = code + "\nimport tuiapp.tui.textual_private as t; print(sorted(t.ON))"
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, check=True)


def test_every_fast_path_is_on_with_the_pinned_textual_and_no_warning():
    done = probe(None)
    assert done.stdout.split("\n")[0] == str(sorted(textual_private.FAST_PATHS))
    assert done.stderr == ""


@pytest.mark.parametrize(("value", "on"), [("0", []), ("1", sorted(textual_private.FAST_PATHS)),
                                           ("banded, render", ["banded", "render"]), ("nonsense", [])])
def test_the_switch_chooses_the_fast_paths(value, on):
    done = probe(value)
    assert done.stdout.strip() == str(on) and done.stderr == ""


def test_a_missing_internal_turns_its_path_off_with_one_warning_line():
    # A Textual whose compositor lost the method the banded update calls, and whose widget
    # module lost _RenderCache: those two paths go, the others stay, one line says why.
    moved = ("import textual._compositor as c, textual.widget as w\n"
             "del c.Compositor._regions_to_spans\n"
             "del w._RenderCache\n")
    done = probe(None, moved)
    assert done.stdout.strip() == "['driver']"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Compositor._regions_to_spans" in lines[0] and "_RenderCache" in lines[0]
    assert "using Textual's own paths" in lines[0]


def test_a_moved_instance_attribute_is_noticed():
    class Base:
        def __init__(self):
            self._kept = 1

    class Child(Base):
        def __init__(self):
            super().__init__()

    assert textual_private._assigns(Child, "__init__", "_kept") == []
    assert textual_private._assigns(Child, "__init__", "_gone") == ["Child.__init__:_gone"]


def screen_text(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def dashboard_screen(size) -> tuple[list[str], DashboardApp]:
    session = Session(title="fast", sources=[idle])
    app = DashboardApp(session)
    async with app.run_test(size=size) as pilot:
        await paint_in_slices(pilot, session.bus, EVENTS, 40)
        await pilot.pause()
        return screen_text(app), app


@pytest.mark.parametrize("size", [(100, 30), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.slow
async def test_the_dashboard_with_the_fast_paths_off_shows_the_same_screen(monkeypatch, size):
    fast_shown, _fast_app = await dashboard_screen(size)

    monkeypatch.setattr(textual_private, "ON", set())
    installed: list[object] = []
    own_install = banded_update.install
    monkeypatch.setattr(banded_update, "install", lambda screen: installed.append(screen) or own_install(screen))
    strip_makers: list[object] = []
    monkeypatch.setattr(Panel, "_changed_lines", lambda self, text, size, own=Panel._changed_lines:
                        strip_makers.append(own(self, text, size)) or own(self, text, size))
    plain_shown, _plain_app = await dashboard_screen(size)

    # Textual's own paths were taken: its compositor update, whole-panel refreshes
    compositor = textual_private.compositor(installed[0])
    assert compositor.render_partial_update.__func__ is type(compositor).render_partial_update
    assert strip_makers and all(lines is None for lines in strip_makers)
    assert sum("tok/s" in line for line in plain_shown) >= 1  # the dashboard is drawn, with figures
    for y, (a, b) in enumerate(zip(fast_shown, plain_shown, strict=True)):
        assert a == b, f"row {y}: {a!r} != {b!r}"


def test_run_app_keeps_textuals_own_driver_with_the_driver_path_off(monkeypatch):
    from tuiapp.tui import app as app_module

    chosen: list[type] = []
    monkeypatch.setattr(DashboardApp, "run", lambda self: chosen.append(self.driver_class))
    session = Session(title="driver", sources=[idle])
    monkeypatch.setattr(textual_private, "ON", set())
    app_module.run_app(session)
    monkeypatch.setattr(textual_private, "ON", {"driver"})
    app_module.run_app(session)
    assert chosen[0] is not GuardedLinuxDriver and chosen[1] is GuardedLinuxDriver
    assert issubclass(GuardedLinuxDriver, LinuxDriver)
