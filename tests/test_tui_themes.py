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


@pytest.mark.slow
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
        assert f"tuiapp/themes/{path.name}" in names


MINE = '''name = "mine"
primary = "#AA3377"
background = "#101010"
dark = true
'''


def test_the_shipped_themes_are_the_top_level_folder_in_a_checkout():
    root = Path(__file__).resolve().parent.parent
    assert themes_dir() == root / "themes"
    assert {p.name for p in themes_dir().iterdir()} >= {"nv-dark.toml", *theme_files.LAYOUT_FILES}


async def test_a_users_palette_in_the_config_folder_is_offered_and_chosen_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "tuiapp" / "themes").mkdir(parents=True)
    (tmp_path / "tuiapp" / "themes" / "mine.toml").write_text(MINE)
    app = DashboardApp(Session(title="mine", sources=[idle]), theme="mine")
    assert "mine" in app.file_themes and {"nv-dark", "nv-light"} <= set(app.file_themes)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.current_theme.name == "mine" and app.current_theme.primary == "#AA3377"


async def test_theme_path_loads_that_palette_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    path = tmp_path / "elsewhere.toml"
    path.write_text(MINE.replace('"mine"', '"elsewhere"'))
    app = DashboardApp(Session(title="path", sources=[idle]), theme=str(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.current_theme.name == "elsewhere"
        assert "elsewhere" in app.file_themes  # the theme key cycles through it too


@pytest.mark.parametrize(("text", "needle"), [(None, "No such file"), ("name = 1\n", "name"),
                                              ("name = \n", "elsewhere.toml")])
def test_a_bad_theme_file_is_a_usage_error_naming_it(tmp_path, monkeypatch, text, needle):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    path = tmp_path / "elsewhere.toml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(UsageError, match=needle) as caught:
        DashboardApp(Session(title="bad", sources=[idle]), theme=str(path))
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_a_broken_palette_in_the_config_folder_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "tuiapp" / "themes").mkdir(parents=True)
    (tmp_path / "tuiapp" / "themes" / "typo.toml").write_text('name = "typo"\nprimry = "#fff"\n')
    with pytest.raises(UsageError, match="typo.toml: primary"):
        DashboardApp(Session(title="typo", sources=[idle]))


@pytest.mark.slow
def test_a_plain_install_finds_the_shipped_themes(tmp_path):
    # `pip install .` from a clone: the package has no top-level folder to look at, only the
    # wheel's copy. Installed into a target folder and imported from there, outside the checkout.
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(target), str(root)], check=True, capture_output=True, timeout=300)
    script = ("from tuiapp.tui import theme_files as t; "
              "print(t.themes_dir()); print(sorted(x.name for x in t.load_themes()));"
              "print(all(p.is_file() for p in t.layout_paths()))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=True, timeout=60)
    where, names, layouts = done.stdout.splitlines()
    assert Path(where) == target / "tuiapp" / "themes"
    assert "nv-dark" in names and layouts == "True"
