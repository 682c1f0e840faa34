"""Stand-in programs for preflight tests: each notes in a file every time it is run.

``fake_sglang(root, ...)`` writes a package ``sglang`` under ``root`` whose
``python -m sglang.launch_server`` is ``tests/data/server/argparse_server.py`` with a profile
(its --help lists that SGLang version's flags), or prints ``output`` and exits with ``code``,
or runs ``source``.
Put ``root`` on PYTHONPATH to make it the installed SGLang.
"""

from __future__ import annotations

from pathlib import Path

ARGPARSE_SERVER = Path(__file__).parent / "data" / "server" / "argparse_server.py"


def fake_sglang(root: Path, *, profile: str = "0.5.23", output: str | None = None, code: int = 1,
                source: str | None = None) -> Path:
    """The package's directory; every run appends a line to ``root / "runs"``."""
    pkg = root / "sglang"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    runs = root / "runs"
    head = f"import pathlib, sys\npathlib.Path({str(runs)!r}).open('a').write(' '.join(sys.argv[1:]) + '\\n')\n"
    if source is not None:
        body = source
    elif output is None:
        body = (f"import runpy\nsys.argv[1:1] = [{profile!r}]\n"
                f"runpy.run_path({str(ARGPARSE_SERVER)!r}, run_name='__main__')\n")
    else:
        body = f"sys.stdout.write({output!r})\nsys.stdout.flush()\nsys.exit({code})\n"
    (pkg / "launch_server.py").write_text(head + body)
    return root


def runs_of(root: Path) -> list[str]:
    """The argument lines of each run of the stand-in (empty when it never ran)."""
    runs = root / "runs"
    return runs.read_text().splitlines() if runs.exists() else []


def touching_script(path: Path, marker: Path, *, shell: bool = False) -> Path:
    """A program that would do real work: it touches ``marker`` whatever its arguments (--help too)."""
    if shell:
        path.write_text(f"#!/bin/sh\ntouch {marker}\necho working\n")
    else:
        path.write_text(f"import pathlib, sys\npathlib.Path({str(marker)!r}).touch()\nprint('working', sys.argv[1:])\n")
    path.chmod(0o755)
    return path
