"""Base for the dashboard panels: render from the store, repaint only when its version moved."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

from tuiapp.tui import textual_private
from tuiapp.tui.store import DashboardStore
from tuiapp.tui.widgets.strips import StripMaker


class Panel(Widget):
    """A panel renders one Rich Text from the store; colours come from component classes,
    so the .tcss files (and so the theme) decide them, never a hex value in Python."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "panel--label", "panel--muted", "panel--value", "panel--ok", "panel--warn",
        "panel--error", "panel--spark", "panel--rx", "panel--tx", "panel--free", "panel--badge",
    }
    panel_key: ClassVar[str] = ""
    #: at most one repaint per this many seconds (0: every paint tick); a figure that is
    #: sampled every second or faster is still never shown more than ~1 s old
    min_interval_s: ClassVar[float] = 0.0
    #: render and compare before refreshing (False where the text nearly always moves)
    compare_text: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "render" in cls.__dict__:
            cls.render = _reusing_compared(cls.__dict__["render"])

    def __init__(self, store: DashboardStore, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.painted_version = -1
        self._painted_text: object = None
        self._painted_s = 0.0
        self._strip_maker = StripMaker()
        # name -> Rich style, kept until the CSS is applied to the panel again (a theme, a class)
        # or its background moves: ~80 lookups a frame, each a DOM walk and a blend otherwise
        self._tones: dict[str, Style] = {}
        self._tones_background: object = None

    def _render_content(self) -> None:
        """Textual's own, except that the text becomes strips through the memoised StripMaker
        (Textual's Content costs ~10x as much for the same cells); Textual still decides when
        (a refresh, a resize or a new theme marks the widget dirty and lands here)."""
        if not textual_private.fast("render"):
            super()._render_content()
            return
        size = self.size  # a lookup through the screen's map each time: once per render
        width, height = size
        text = self.render()
        made = self.__dict__.pop("_made", None)
        if made is not None and made[0] is text and made[1] == size and made[2] == self.visual_style:
            strips = made[3]  # paint() made them to find the changed lines
        else:
            strips = self._strip_maker.strips(self, text, width, height)
        if strips is None:
            visual = visualize(self, text, markup=textual_private.render_markup(self))
            strips = Visual.to_strips(self, visual, width, height, self.visual_style)
        textual_private.render_cache(self, strips)

    def paint(self, force: bool = False, *, urgent: bool = False) -> None:
        """Refresh if the store changed what this panel shows (called by the dashboard's frame;
        ``urgent``: what changed must show now, however recently the panel was painted).

        A version that moved does not always move the text (the same figure again, a
        series that only grew off-screen): the text is rendered and compared first, since
        a refresh costs Textual ~10x what building the Rich Text does."""
        version = self.view_version()
        if not force and version == self.painted_version:
            return  # unchanged
        size = self.size  # a lookup through the screen's map each time: once per paint
        if not force and not size.area:
            return  # not on screen (another layout's copy): painted when it shows
        now_s = time.monotonic()
        if not (force or urgent) and now_s - self._painted_s < self.min_interval_s:
            return  # painted a moment ago: the next frame after the interval shows it
        self._painted_s = now_s
        self.painted_version = version
        self.__dict__.pop("_compared", None)  # an unused one is older than what comes now
        self.__dict__.pop("_made", None)
        if force or not size.area:
            self._painted_text = None
            self.refresh(layout=force)
            return
        text = self.render()
        if self.compare_text and text == self._painted_text:
            return
        self._painted_text = text if self.compare_text else None
        self._compared = (text, size)  # Textual's render for this refresh takes it
        changed = self._changed_lines(text, size)
        if changed is None:
            self.refresh()
        elif changed:
            self.refresh(*changed)

    def view_version(self) -> object:
        """What the text depends on: the store's version of this panel (a panel with a view
        state of its own, a cursor say, adds it)."""
        return self.store.versions[self.panel_key]

    def _changed_lines(self, text: object, size) -> list[Region] | None:
        """The content lines whose strips differ from the ones on screen, or None for all.

        Textual re-renders every line of a refreshed widget (borders, background, the colour
        filter, a new Strip or three per line) and the compositor re-cuts them all; a frame
        usually moves a figure or two, so only their lines are marked dirty."""
        if not textual_private.fast("render"):
            return None  # the lines on screen are Textual's to compare: all of them, then
        cache = textual_private.cached_render(self)
        if textual_private.dirty_regions(self) or cache.size != size or self.text_selection is not None:
            return None  # a whole repaint is pending anyway, or the lines on screen are not ours
        width, height = size
        strips = self._strip_maker.strips(self, text, width, height)
        if strips is None:
            return None
        self._made = (text, size, self.visual_style, strips)
        old = cache.lines
        blank = _NO_LINE
        changed = []
        for y in range(height):
            new_line = strips[y] if y < len(strips) else blank
            old_line = old[y] if y < len(old) else blank
            if new_line is not old_line and new_line != old_line:
                changed.append(_changed_cells(new_line, old_line, y, width))
        return changed

    def tone(self, name: str) -> Style:
        # Memoised: a GPU table asks ~100 times a frame for 11 tones. Read from the component's
        # own styles: Textual's getter also builds the full style, a DOM walk (~0.1 ms) per
        # tone, since every refresh empties its cache.
        style = self._tones.get(name)
        if style is None:
            component = f"panel--{name}"
            partial = self.get_component_styles(component).partial_rich_style
            style = self._tones[name] = tone_style(self, component, partial)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._tones = {}  # the CSS was applied again: a new theme or class may move any tone


_NO_LINE = Strip([])  # past the text's last line: Textual shows a blank there


def _changed_cells(new: Strip, old: Strip, y: int, width: int) -> Region:
    """The cells of line ``y`` from the first that differs to the last: the terminal is sent
    those (a GPU row whose power moved, not its 60 columns of unchanged history)."""
    new_segments, old_segments = list(new), list(old)
    start = 0
    for a, b in zip(new_segments, old_segments, strict=False):
        if a != b:
            break
        start += a.cell_length
    end = width
    if new.cell_length == old.cell_length:  # else the rest of the row changes (or clears)
        end = new.cell_length
        for a, b in zip(reversed(new_segments), reversed(old_segments), strict=False):
            if a != b or end - a.cell_length < start:
                break
            end -= a.cell_length
    start = min(start, width - 1)
    return Region(start, y, max(1, min(end, width) - start), 1)


def _reusing_compared(render):
    """A panel's ``render`` that first hands out the text paint() just built to compare
    (once, and only at the same size), so a changed panel is not rendered twice per frame."""

    def reuse(self):
        background = self.styles.background
        if background != self._tones_background:  # set in code, not by the CSS: tones blend over it
            self._tones, self._tones_background = {}, background
        compared = self.__dict__.pop("_compared", None)
        if compared is not None and compared[1] == self.size:
            return compared[0]
        return reuse.__wrapped__(self)

    reuse.__doc__ = render.__doc__
    reuse.__wrapped__ = render
    return reuse


def tone_style(widget: Widget, component: str, partial: Style | None = None) -> Style:
    """A component class as a Rich style for text in ``widget``. The partial style alone
    drops a colour's alpha (``$foreground 50%`` came out as the full foreground, so muted,
    label and free text all looked alike); its colour is taken from the full style, blended
    over the widget's background, and nothing else of the full style (not its background)."""
    # Cached per widget, keyed by what the blend depends on (the class's own style and the
    # widget's background, both cheap to read and always the current CSS's): the full style
    # walks the DOM for the background (0.2 ms), and Textual's cache is cleared every repaint.
    if partial is None:  # the class's own style, without its parents'
        partial = widget.get_component_rich_style(component, partial=True)
    if partial.color is None:  # the class sets no colour (a badge's reverse): nothing to blend
        return partial
    cache = widget.__dict__.setdefault("_tone_styles", {})
    key = (component, partial, widget.styles.background)
    style = cache.get(key)
    if style is None:
        full = widget.get_component_rich_style(component)
        style = cache[key] = partial + Style(color=full.color) if full.color is not None else partial
    return style
