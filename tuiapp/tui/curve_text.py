"""A throughput-vs-latency chart in character cells, for the dashboard's latency panel.

Pure (no Textual): ``curve_grid`` places each trial's points by aggregate output tok/s (x)
and a latency (y), p50 with the trial's letter in upper case and p99 in lower case, and
joins a curve's points with dots. The panel colours the letters per trial.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuiapp.events import PointDone


def _line(grid: list[list[str]], x0: int, y0: int, x1: int, y1: int) -> None:
    steps = max(abs(x1 - x0), abs(y1 - y0))
    for k in range(1, steps):
        x = round(x0 + (x1 - x0) * k / steps)
        y = round(y0 + (y1 - y0) * k / steps)
        if grid[y][x] == " ":
            grid[y][x] = "·"


def curve_grid(curves: dict[str, Sequence[PointDone]], width: int, rows: int, metric: str = "ttft",
               ) -> tuple[list[str], float, float, dict[str, str]]:
    """(rows of text, top latency ms, right-hand tok/s, trial -> letter)."""
    width, rows = max(4, width), max(2, rows)
    pts = {name: [p for p in ps if p.output_tok_s is not None] for name, ps in curves.items()}
    xs = [p.output_tok_s for ps in pts.values() for p in ps]
    ys = [v for ps in pts.values() for p in ps for q in ("p50", "p99")
          if (v := getattr(p, f"{metric}_{q}_ms")) is not None]
    x_hi = max(xs, default=0.0) * 1.05 or 1.0
    y_hi = max(ys, default=0.0) * 1.05 or 1.0
    grid = [[" "] * width for _ in range(rows)]
    letters: dict[str, str] = {}
    for k, (name, ps) in enumerate(pts.items()):
        letter = chr(ord("a") + k % 26)
        letters[name] = letter
        for q, mark in (("p99", letter), ("p50", letter.upper())):
            cells = []
            for p in sorted(ps, key=lambda p: p.output_tok_s or 0.0):
                v = getattr(p, f"{metric}_{q}_ms")
                if v is None:
                    continue
                cx = min(width - 1, int(p.output_tok_s / x_hi * (width - 1)))  # type: ignore[operator]
                cy = rows - 1 - min(rows - 1, int(v / y_hi * (rows - 1)))
                cells.append((cx, cy))
            for (ax, ay), (bx, by) in zip(cells, cells[1:], strict=False):
                _line(grid, ax, ay, bx, by)
            for cx, cy in cells:
                grid[cy][cx] = mark
    return ["".join(r) for r in grid], y_hi, x_hi, letters
