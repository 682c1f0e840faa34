"""Theme palettes (*.toml) and layout files (*.tcss): the shipped ones and the user's.

The shipped ones live in the repository's top-level ``themes/``; the wheel carries them as
``tuiapp/themes/`` (pyproject's force-include), and a source checkout (an editable install)
reads the top-level folder itself. A user's own palettes are every ``*.toml`` in
``$XDG_CONFIG_HOME/tuiapp/themes/`` (``~/.config/tuiapp/themes/``), and ``--theme PATH.toml``
names one file. A palette is validated by a pydantic model so a typo names the file and the
field instead of failing deep inside Textual.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from textual.theme import Theme

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_THEME = "nv-dark"
LAYOUT_FILES = ("dashboard.tcss", "screens.tcss")


def themes_dir() -> Path:
    """The shipped palettes and layouts: in the wheel, else the source checkout's themes/."""
    installed = _PACKAGE_DIR / "themes"
    return installed if installed.is_dir() else _PACKAGE_DIR.parent / "themes"


def user_themes_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "tuiapp" / "themes"


def is_theme_path(theme: str) -> bool:
    """Whether ``--theme`` names a file rather than a theme."""
    return theme.endswith(".toml") or os.sep in theme


class Palette(BaseModel):
    """The fields of textual.theme.Theme a palette file may set."""

    model_config = ConfigDict(extra="forbid")
    name: str
    primary: str
    secondary: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    accent: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None
    dark: bool = True
    luminosity_spread: float = 0.15
    text_alpha: float = 0.95
    variables: dict[str, str] = {}


class ThemeFileError(ValueError):
    pass


def load_theme(path: Path) -> Theme:
    try:
        palette = Palette.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ThemeFileError(f"{path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(part) for part in err["loc"]) or "(file)"
        raise ThemeFileError(f"{path}: {field}: {err['msg']}") from exc
    return Theme(**palette.model_dump())


def load_themes(directory: Path | None = None) -> list[Theme]:
    """Every palette in the themes directory, sorted by file name."""
    directory = directory or themes_dir()
    return [load_theme(path) for path in sorted(directory.glob("*.toml"))]


def load_all_themes() -> list[Theme]:
    """The shipped palettes, then the user's (one of the same name takes the shipped one's place)."""
    themes = {theme.name: theme for theme in load_themes()}
    user_dir = user_themes_dir()
    if user_dir.is_dir():
        themes.update((theme.name, theme) for theme in load_themes(user_dir))
    return list(themes.values())


def layout_paths(directory: Path | None = None) -> list[Path]:
    directory = directory or themes_dir()
    return [directory / name for name in LAYOUT_FILES]
