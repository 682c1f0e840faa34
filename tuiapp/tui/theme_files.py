"""Theme palettes (tuiapp/tui/themes/*.toml) and layout files (themes/*.tcss): package data.

A palette is validated by a pydantic model so a typo names the
file and the field instead of failing deep inside Textual.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from textual.theme import Theme

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_THEMES_DIR = Path(__file__).resolve().parent / "themes"
DEFAULT_THEME = "nv-dark"
LAYOUT_FILES = ("dashboard.tcss", "screens.tcss")


def themes_dir() -> Path:
    return _THEMES_DIR


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


def layout_paths(directory: Path | None = None) -> list[Path]:
    directory = directory or themes_dir()
    return [directory / name for name in LAYOUT_FILES]
