"""Load-curve plots in character cells, for the dashboard's curve panel.

Pure (no Textual): ``load_grid`` places each trial's points by offered load (x: concurrency
or req/s, on a log scale when the loads span 8x or more, as doubling sweeps do) against a
figure (y, from zero), joins a curve's points with dots and marks them with the trial's
letter; with two figures (TTFT p50 and p99) the first gets the upper-case letter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import log10

from tuiapp.events import PointDone

Figure = Callable[[PointDone], float | None]


def load_of(p: PointDone) -> float | None:
    """The load a point was run at: its target rate (open loop) or its concurrency."""
    return p.request_rate if p.request_rate is not None else (float(p.concurrency) if p.concurrency else None)


def _line(grid: list[list[str]], x0: int, y0: int, x1: int, y1: int) -> None:
    steps = max(abs(x1 - x0), abs(y1 - y0))
    for k in range(1, steps):
        x = round(x0 + (x1 - x0) * k / steps)
        y = round(y0 + (y1 - y0) * k / steps)
        if grid[y][x] == " ":
            grid[y][x] = "·"


class LoadAxis:
    """Where a load falls in ``width`` columns."""

    def __init__(self, loads: Sequence[float], width: int) -> None:
        self.width = max(2, width)
        self.lo, self.hi = min(loads, default=1.0), max(loads, default=1.0)
        self.log = self.lo > 0 and self.hi / self.lo >= 8

    def x(self, load: float) -> int:
        if self.hi <= self.lo:
            return self.width // 2
        if self.log:
            frac = (log10(load) - log10(self.lo)) / (log10(self.hi) - log10(self.lo))
        else:
            frac = (load - self.lo) / (self.hi - self.lo)
        return min(self.width - 1, max(0, round(frac * (self.width - 1))))

    def ticks(self, loads: Sequence[float]) -> str:
        """The loads under their columns, left to right, those that fit."""
        row = [" "] * self.width
        end = -1
        for load in sorted(set(loads)):
            label = f"{load:g}"
            x = self.x(load)
            start = min(max(0, x - len(label) // 2), self.width - len(label))
            if start > end + 1 or end < 0:
                row[start:start + len(label)] = label
                end = start + len(label) - 1
        return "".join(row)


def load_grid(curves: dict[str, Sequence[PointDone]], axis: LoadAxis, rows: int,
              figures: Sequence[Figure]) -> tuple[list[str], float, dict[str, str]]:
    """(rows of text, top of the y scale, trial -> letter); y runs from zero."""
    rows = max(2, rows)
    width = axis.width
    ys = [v for ps in curves.values() for p in ps for f in figures if (v := f(p)) is not None]
    y_hi = max(ys, default=0.0) * 1.05 or 1.0
    grid = [[" "] * width for _ in range(rows)]
    letters: dict[str, str] = {}
    for k, (name, ps) in enumerate(curves.items()):
        letter = chr(ord("a") + k % 26)
        letters[name] = letter
        marks = [letter.upper(), letter] if len(figures) > 1 else [letter.upper()]
        for figure, mark in reversed(list(zip(figures, marks, strict=False))):  # the first figure drawn last, on top
            cells = []
            for p in sorted(ps, key=lambda p: load_of(p) or 0.0):
                load, v = load_of(p), figure(p)
                if load is None or v is None:
                    continue
                cells.append((axis.x(load), rows - 1 - min(rows - 1, round(v / y_hi * (rows - 1)))))
            for (ax, ay), (bx, by) in zip(cells, cells[1:], strict=False):
                _line(grid, ax, ay, bx, by)
            for cx, cy in cells:
                grid[cy][cx] = mark
    return ["".join(r) for r in grid], y_hi, letters
