"""Plans shipped with tuiapp (package data): ``campaign`` is the reference campaign."""

from __future__ import annotations

from pathlib import Path

PLANS_DIR = Path(__file__).resolve().parent


def shipped() -> list[str]:
    return sorted(p.stem for p in PLANS_DIR.glob("*.toml"))


def reference_plan_path() -> Path:
    return PLANS_DIR / "campaign.toml"


def plan_path(name_or_path: str) -> Path:
    """A file path as given; a bare name that is no file names a shipped plan (a folder
    called ``campaign`` where the user stands does not hide the reference plan)."""
    path = Path(name_or_path)
    if path.is_file() or path.suffix or "/" in name_or_path:
        return path
    shipped_path = PLANS_DIR / f"{name_or_path}.toml"
    return shipped_path if shipped_path.exists() else path
