"""Every themes/*.toml loads, the app starts with each, switches at run time, and errors are clear."""

from pathlib import Path

import pytest
from textual.color import Color

from tuiapp.cli import UsageError
from tuiapp.session import Session
from tuiapp.tui import theme_files
from tuiapp.tui.app import DashboardApp
from tuiapp.tui.theme_files import ThemeFileError, load_theme, load_themes, themes_dir
from tuiapp.tui.widgets.gpu_table import GpuTable

THEME_FILES = sorted(themes_dir().glob("*.toml"))


def test_every_theme_file_loads_and_the_required_kinds_exist():
    themes = load_themes()
    assert [t.name for t in themes] == [load_theme(p).name for p in THEME_FILES]
    names = {t.name for t in themes}
    assert {"nv-dark", "nv-light", "nv-high-contrast"} <= names
    assert {t.dark for t in themes} == {True, False}
    for path in theme_files.layout_paths():
        assert path.is_file()


@pytest.mark.parametrize("path", THEME_FILES, ids=lambda p: p.stem)
async def test_app_runs_with_each_theme_and_its_colours_reach_the_panels(path):
    theme = load_theme(path)
    app = DashboardApp(Session(title="t", sources=[]), theme=theme.name)
    async with app.run_test(size=(80, 24)):
        assert app.theme == theme.name
        error = app.dashboard.query_one(GpuTable).tone("error").color
        want = Color.parse(theme.error)
        assert error is not None
        assert max(abs(a - b) for a, b in zip(error.triplet, (want.r, want.g, want.b), strict=True)) <= 2


async def test_t_cycles_through_the_file_themes():
    app = DashboardApp(Session(title="t", sources=[]), theme="nv-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        seen = [app.theme]
        for _ in THEME_FILES:
            await pilot.press("t")
            seen.append(app.theme)
        assert sorted(set(seen)) == sorted(t.name for t in load_themes()) and seen[-1] == "nv-dark"


def test_unknown_theme_is_a_usage_error_naming_the_choices():
    with pytest.raises(UsageError, match="nv-light"):
        DashboardApp(Session(title="t", sources=[]), theme="no-such-theme")


def test_a_bad_palette_names_the_file_and_the_field(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nprimary = "#76B900"\nforground = "#FFFFFF"\n')
    with pytest.raises(ThemeFileError, match=r"bad\.toml: forground"):
        load_theme(bad)


def test_installed_wheel_location_wins_over_the_checkout(tmp_path: Path, monkeypatch):
    wheel, checkout = tmp_path / "_themes", tmp_path / "themes"
    checkout.mkdir()
    monkeypatch.setattr(theme_files, "_CANDIDATES", (wheel, checkout))
    assert themes_dir() == checkout
    wheel.mkdir()
    assert themes_dir() == wheel
