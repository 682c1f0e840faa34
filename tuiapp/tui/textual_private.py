"""Every private name of Textual the dashboard touches, in this one module.

Textual is pinned exactly (pyproject), but a private module or attribute may still move in
any release, and a dashboard that fails to start is worse than a slower one. So the
internals each fast path needs are checked once, at import: a fast path whose internals
are all there is on; one that misses any is off, with one warning line on stderr naming
what is missing, and the dashboard takes Textual's public path for that job.

``TUIAPP_TEXTUAL_FAST`` chooses by hand: ``0`` turns every fast path off (Textual's own
compositor update, widget rendering and terminal driver); unset or ``1`` turns on every one
whose internals are present; a comma list (``banded,render``) turns on only those named.

The fast paths (docs/dashboard.md has what each saves):

* ``banded``: a partial screen update renders only the rows it sends (banded_update.py);
* ``render``: a panel's text becomes strips through the memoised StripMaker (widgets/panel.py);
* ``driver``: the Linux driver that survives a terminal going away (terminal_driver.py).

A fast path that saved nothing measurable was removed rather than kept behind the switch
(docs/dashboard.md has the figures).
"""

from __future__ import annotations

import os
import sys
from typing import Any

FAST_ENV = "TUIAPP_TEXTUAL_FAST"
FAST_PATHS = ("banded", "render", "driver")


def _assigns(cls: type, method: str, *names: str) -> list[str]:
    """The names a method never mentions (an instance attribute set in ``__init__`` shows up
    among the attribute names its code uses); [] when it mentions them all."""
    used: set[str] = set()
    for klass in cls.__mro__:  # a base class's __init__ may be the one that sets it
        code = getattr(klass.__dict__.get(method), "__code__", None)
        if code is not None:
            used.update(code.co_names)
    return [f"{cls.__name__}.{method}:{name}" for name in names if name not in used]


def _has(cls: type, *names: str) -> list[str]:
    return [f"{cls.__name__}.{name}" for name in names if not hasattr(cls, name)]


def _check_banded() -> tuple[list[str], dict[str, Any]]:
    from textual._compositor import ChopsUpdate, Compositor
    from textual.screen import Screen

    missing = _has(Compositor, "render_partial_update", "_regions_to_spans", "cuts",
                   "visible_widgets")
    missing += _assigns(Compositor, "__init__", "_dirty_regions", "size")
    missing += _assigns(Screen, "__init__", "_compositor")
    return missing, {"ChopsUpdate": ChopsUpdate, "Compositor": Compositor}


def _check_render() -> tuple[list[str], dict[str, Any]]:
    from textual.widget import Widget, _RenderCache

    missing = _has(Widget, "_render_content", "visual_style")
    missing += _assigns(Widget, "__init__", "_render_cache", "_dirty_regions", "_render_markup")
    missing += _assigns(Widget, "_render_content", "_render_cache")
    return missing, {"RenderCache": _RenderCache}


def _check_driver() -> tuple[list[str], dict[str, Any]]:
    from textual._parser import ParseError
    from textual._xterm_parser import XTermParser
    from textual.app import App
    from textual.drivers._writer_thread import WriterThread
    from textual.drivers.linux_driver import LinuxDriver

    missing = _has(LinuxDriver, "_sigtstp_application", "_sigcont_application",
                   "_run_input_thread", "run_input_thread", "process_message")
    missing += _assigns(LinuxDriver, "__init__", "_writer_thread", "_file", "exit_event", "_debug")
    missing += _assigns(WriterThread, "__init__", "_queue")
    missing += _assigns(App, "__init__", "_driver")
    return missing, {"ParseError": ParseError, "XTermParser": XTermParser}


_CHECKS = {"banded": _check_banded, "render": _check_render, "driver": _check_driver}


def _wanted(value: str | None) -> set[str]:
    if value is None or value.strip() in ("", "1"):
        return set(FAST_PATHS)
    if value.strip() == "0":
        return set()
    return {name.strip() for name in value.split(",") if name.strip() in FAST_PATHS}


def _probe() -> tuple[set[str], dict[str, Any], list[str]]:
    on: set[str] = set()
    names: dict[str, Any] = {}
    missing: list[str] = []
    for path in FAST_PATHS:
        try:
            lacks, found = _CHECKS[path]()
        except (ImportError, AttributeError) as exc:  # a private module or name that moved
            lacks, found = [f"{path}: {exc}"], {}
        if lacks:
            if path in WANTED:  # one switched off is nobody's concern
                missing += lacks
        else:
            names.update(found)
            if path in WANTED:
                on.add(path)
    return on, names, missing


WANTED = _wanted(os.environ.get(FAST_ENV))
ON, _NAMES, MISSING = _probe()
if MISSING:
    import textual

    print(f"tuiapp: textual {textual.__version__} lacks internals the fast paths need "
          f"({', '.join(MISSING)}); using Textual's own paths", file=sys.stderr)


def fast(path: str) -> bool:
    """Whether a fast path is on (its internals are present and the switch allows it)."""
    return path in ON


def private(name: str) -> Any:
    """A private Textual name checked at import; only for a fast path that is on."""
    return _NAMES[name]


def compositor(screen: Any) -> Any:
    return screen._compositor


def app_driver(app: Any) -> Any:
    return app._driver


def render_cache(widget: Any, strips: list) -> None:
    """What Textual's ``_render_content`` leaves behind, for strips made here."""
    widget._render_cache = _NAMES["RenderCache"](widget.size, strips)
    widget._dirty_regions.clear()


def cached_render(widget: Any) -> Any:
    """The widget's last rendered strips (``.size``, ``.lines``)."""
    return widget._render_cache


def render_markup(widget: Any) -> bool:
    return widget._render_markup


def dirty_regions(compositor: Any) -> set:
    return compositor._dirty_regions


def writer_queue(writer: Any) -> Any:
    return getattr(writer, "_queue", None)


def writer_thread(driver: Any) -> Any:
    return driver._writer_thread
