"""The panels' own strips (StripMaker) are cell for cell what Textual's Content would render,
and they follow the store, the size and the theme."""

from __future__ import annotations

import pytest
from rich.style import Style
from rich.text import Span, Text
from test_tui_snapshots import EVENTS, THEMES, settle  # tests/ is on the path
from textual.visual import Visual, visualize

from tuiapp.commands.preview import preview_session
from tuiapp.events import GpuSample
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.widgets.gpu_table import GpuTable
from tuiapp.tui.widgets.panel import Panel
from tuiapp.tui.widgets.strips import StripMaker
from tuiapp.tui.widgets.text_builder import TextBuilder, join_lines


def cells(strips) -> list[list[tuple[str, Style | None]]]:
    """What a terminal gets: each character with its style (segment boundaries aside)."""
    return [[(ch, seg.style) for seg in strip for ch in seg.text] for strip in strips]


def textual_strips(panel: Panel, text) -> list:
    visual = visualize(panel, text, markup=False)
    return Visual.to_strips(panel, visual, panel.size.width, panel.size.height, panel.visual_style)


def assert_same_as_textual(panel: Panel, text=None) -> None:
    text = panel.render() if text is None else text
    ours = StripMaker().strips(panel, text, panel.size.width, panel.size.height)
    assert ours is not None, f"{panel.id}: not on the fast path"
    assert cells(ours) == cells(textual_strips(panel, text)), panel.id
    assert [s.cell_length for s in ours] == [s.cell_length for s in textual_strips(panel, text)]


@pytest.mark.parametrize("size", [(80, 24), (160, 48), (200, 60)])
@pytest.mark.parametrize("theme", THEMES)
async def test_every_panel_renders_what_textual_would(theme, size):
    app = DashboardApp(preview_session(EVENTS), theme=theme)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for panel in app.dashboard.query(Panel):
            if panel.size.area and str(panel.render()):
                assert_same_as_textual(panel)


async def test_overlong_lines_a_base_style_and_odd_text():
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panel = app.dashboard.query_one(GpuTable)
        red, bold = Style(color="red"), Style(bold=True)
        long = Text("x" * 300, red, no_wrap=True)
        long.stylize(bold, 250, 300)  # a span past the cut: the ellipsis takes it
        assert_same_as_textual(panel, long)
        mixed = Text("ab", red)  # overlapping spans, wide characters, an unstyled gap
        mixed.append("日本語" * 40, bold)
        mixed.append(" plain ")
        mixed.stylize(Style(italic=True), 1, 5)
        assert_same_as_textual(panel, Text("\n").join([mixed, Text("second")]))
        maker = StripMaker()
        for odd in ("tab\there", "blank\n\nline", "\nlead", "trail\n"):  # left to Textual
            assert maker.strips(panel, Text(odd), 80, 8) is None


async def test_a_panel_s_lines_follow_the_store_the_size_and_the_theme():
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.dashboard.query_one(GpuTable)

        def shown() -> list[str]:
            return [table.render_line(y).text for y in range(table.size.height)]

        def styles() -> set:
            return {seg.style.color for y in range(table.size.height) for seg in table.render_line(y)
                    if seg.style is not None and seg.style.color is not None}

        before = shown()
        assert any(" 0 " in line for line in before)
        app.store.apply(GpuSample(index=0, util_pct=12.0, mem_used_bytes=1 << 30, mem_total_bytes=96 << 30))
        table.paint(force=True)
        await pilot.pause()
        after = shown()
        assert after != before and " 12%" in after[0]

        colours = styles()
        app.theme = next(t for t in THEMES if t != app.theme)
        await pilot.pause()
        assert styles() != colours  # the memo of styles is per theme
        assert_same_as_textual(table)

        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        assert table.size.width > len(after[0])
        assert len(shown()[0]) == table.size.width or shown()[0] != after[0]
        assert_same_as_textual(table)


async def test_a_panel_s_joined_lines_make_the_strips_of_the_joined_text_and_keep_unchanged_ones():
    app = DashboardApp(preview_session(EVENTS))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panel = app.dashboard.query_one(GpuTable)
        red, bold, blue = Style(color="red"), Style(bold=True), Style(color="blue")
        lines = [Text("plain line"), Text.assemble(("a", red), " b ", ("c" * 200, bold)), Text("styled", blue)]
        lines[0].stylize(bold, 2, 5)
        lines[0].stylize(red, 3, 9)  # spans on spans
        joined = join_lines(lines)
        rich_joined = Text("\n", no_wrap=True).join(lines)
        assert joined.plain == rich_joined.plain and joined.spans == rich_joined.spans
        assert_same_as_textual(panel, joined)
        maker = StripMaker()
        first = maker.strips(panel, joined, panel.size.width, panel.size.height)
        assert cells(first) == cells(StripMaker().strips(panel, rich_joined, panel.size.width, panel.size.height))

        lines[1] = Text.assemble(("a", red), " B ", ("c" * 200, bold))  # one line moves
        second = maker.strips(panel, join_lines(lines), panel.size.width, panel.size.height)
        assert second[0] is first[0] and second[2] is first[2]  # the others are kept, not made again
        assert second[1] is not first[1] and "B" in second[1].text
        assert_same_as_textual(panel, join_lines(lines))

        # a span past its line's end covers the next line in the joined text: the general path
        odd = Text("short")
        odd._spans = [Span(2, 9, red)]
        assert_same_as_textual(panel, join_lines([odd, Text("next line")]))


def test_a_built_line_is_rich_s_append_even_for_hostile_text():
    red, bold = Style(color="red"), Style(bold=True)
    for pieces in ([("ok ", red), ("", bold), ("plain", None), (" 42", bold)],
                   [("error: ", red), ("bell\x07 and\rcarriage\x08", bold), (" end", red)]):  # a server's text
        built = TextBuilder()
        appended = Text(no_wrap=True, overflow="ellipsis")
        for piece, style in pieces:
            built.add(piece, style)
            appended.append(piece, style)
        text = built.text(overflow="ellipsis")
        assert (text.plain, text.spans, text.overflow) == (appended.plain, appended.spans, appended.overflow)
