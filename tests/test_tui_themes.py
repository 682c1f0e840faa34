"""Every themes/*.toml loads, the app starts with each, switches at run time, and errors are clear."""

from pathlib import Path

import pytest
from session_helpers import idle  # tests/ is on the path
from textual.color import Color

from tuiapp.common.errors import UsageError
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
    app = DashboardApp(Session(title="t", sources=[idle]), theme=theme.name)
    async with app.run_test(size=(80, 24)):
        assert app.theme == theme.name
        error = app.dashboard.query_one(GpuTable).tone("error").color
        want = Color.parse(theme.error)
        assert error is not None
        assert max(abs(a - b) for a, b in zip(error.triplet, (want.r, want.g, want.b), strict=True)) <= 2


async def test_t_cycles_through_the_file_themes():
    app = DashboardApp(Session(title="t", sources=[idle]), theme="nv-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        seen = [app.theme]
        for _ in THEME_FILES:
            await pilot.press("t")
            seen.append(app.theme)
        assert sorted(set(seen)) == sorted(t.name for t in load_themes()) and seen[-1] == "nv-dark"


def test_unknown_theme_is_a_usage_error_naming_the_choices():
    with pytest.raises(UsageError, match="nv-light"):
        DashboardApp(Session(title="t", sources=[idle]), theme="no-such-theme")


def test_a_bad_palette_names_the_file_and_the_field(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nprimary = "#76B900"\nforground = "#FFFFFF"\n')
    with pytest.raises(ThemeFileError, match=r"bad\.toml: forground"):
        load_theme(bad)


def test_the_wheel_ships_the_themes_as_package_data(tmp_path: Path):
    # Themes are ordinary package data: a built wheel must carry every palette and layout.
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("tuiapp-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in themes_dir().iterdir():
        assert f"tuiapp/tui/themes/{path.name}" in names
