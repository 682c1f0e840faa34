"""Small hand-written SVG line charts: time on x, one polyline per series, a legend.

No plotting dependency: a report's charts are a few hundred points each (series are
bucket-averaged to at most ``max_points``), and plain SVG renders in any browser, in
GitHub's Markdown view, and in most editors' previews.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
)


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]] = field(default_factory=list)  # (x, y)
    markers: bool = False  # draw dots (sparse series like per-run figures)


@dataclass
class Band:
    """A labelled x range drawn behind the series (e.g. one trial)."""

    x0: float
    x1: float
    label: str


def downsample(points: Sequence[tuple[float, float]], max_points: int) -> list[tuple[float, float]]:
    """Bucket means in x order; keeps the shape of a long series at a fixed cost."""
    if len(points) <= max_points:
        return list(points)
    size = len(points) / max_points
    out = []
    for b in range(max_points):
        chunk = points[int(b * size) : int((b + 1) * size)]
        if chunk:
            out.append((sum(p[0] for p in chunk) / len(chunk), sum(p[1] for p in chunk) / len(chunk)))
    return out


def _nice_step(span: float, ticks: int) -> float:
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


_TIME_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def _time_step(span_s: float, ticks: int) -> float:
    raw = span_s / max(1, ticks)
    return float(next((s for s in _TIME_STEPS_S if s >= raw), _TIME_STEPS_S[-1]))


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _fmt_time(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _text_w(text: str, font_px: float = 10) -> float:
    """A sans-serif label's width, near enough to keep labels apart."""
    return 0.6 * font_px * len(text)


def _free_row(rows: list[float], x: float, w: float, max_rows: int) -> int | None:
    """The first row whose last label ends before ``x``; records the new end there."""
    for k in range(max_rows):
        if k == len(rows):
            rows.append(float("-inf"))
        if rows[k] + 4 <= x:
            rows[k] = x + w
            return k
    return None


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    y_label: str,
    bands: Sequence[Band] = (),
    marks: Sequence[tuple[float, str]] = (),
    hlines: Sequence[tuple[float, str]] = (),
    width: int = 880,
    height: int = 300,
    max_points: int = 600,
    y_min: float | None = 0.0,
) -> str:
    """An SVG document; x values are seconds since the recording started. ``marks`` are
    (x, label) events drawn as red vertical lines (alerts)."""
    series = [Series(s.name, downsample(s.points, max_points), s.markers) for s in series if s.points]
    left, right, top = 64, 16, 34
    legend_rows, lx = 1, left
    for k, s in enumerate(series):
        lx += 24 + 7 * len(s.name)
        if lx > width - 120 and k + 1 < len(series):
            legend_rows, lx = legend_rows + 1, left
    bottom = 32 + 14 * legend_rows
    height += 14 * (legend_rows - 1)
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points] + [v for b in bands for v in (b.x0, b.x1)]
    ys = [y for s in series for _, y in s.points]
    limits = [y for y, _ in hlines]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    if not ys:
        out.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#666">no data</text></svg>')
        return "\n".join(out)
    x0, x1 = min(xs), max(xs)
    lo = min(ys) if y_min is None else min(y_min, min(ys))
    hi = max(ys + limits)
    if hi <= lo:
        hi = lo + 1.0
    step = _nice_step(hi - lo, 5)
    lo = math.floor(lo / step) * step
    hi = math.ceil(hi / step) * step
    if x1 <= x0:
        x1 = x0 + 1.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - lo) / (hi - lo) * plot_h

    # Labels go on the first row where they clear the one before (short failed trials sit
    # side by side); a label that clears no row within the plot is left out, never overlapped.
    # Rectangles first, so no band covers an earlier one's label; a label near the right
    # edge is pulled left to stay inside the plot.
    band_rows: list[float] = []
    for k, band in enumerate(bands):
        fill = "#f2f2f2" if k % 2 == 0 else "#e6eef7"
        out.append(
            f'<rect x="{px(band.x0):.1f}" y="{top}" width="{max(0.5, px(band.x1) - px(band.x0)):.1f}" '
            f'height="{plot_h}" fill="{fill}"/>'
        )
    for band in bands:
        w = _text_w(band.label)
        x_text = max(left + 3, min(px(band.x0) + 3, left + plot_w - w - 3))
        row = _free_row(band_rows, x_text, w, max_rows=max(1, int(plot_h // 24)))
        if row is not None:
            out.append(f'<text x="{x_text:.1f}" y="{top + 11 + 11 * row}" fill="#555" '
                       f'font-size="10">{escape(band.label)}</text>')
    y = lo
    while y <= hi + step / 2:
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#dddddd"/>'
            f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_fmt(y)}</text>'
        )
        y += step
    tstep = _time_step(x1 - x0, 6)
    t = math.ceil(x0 / tstep) * tstep
    while t <= x1:
        out.append(
            f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" stroke="#333"/>'
            f'<text x="{px(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_fmt_time(t)}</text>'
        )
        t += tstep
    out.append(
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>'
        f'<text x="14" y="{top + plot_h / 2:.1f}" transform="rotate(-90 14 {top + plot_h / 2:.1f})" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for y_line, label in hlines:
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(y_line):.1f}" y2="{py(y_line):.1f}" stroke="#555" '
            f'stroke-dasharray="6 3"/><text x="{left + plot_w - 4}" y="{py(y_line) - 4:.1f}" text-anchor="end" '
            f'fill="#555" font-size="10">{escape(label)}</text>'
        )
    mark_rows: list[float] = []
    shown_marks: set[tuple[int, str]] = set()
    for x, label in sorted(marks):
        if x0 <= x <= x1:
            out.append(
                f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#d62728" '
                f'stroke-dasharray="4 3"/>'
            )
            key = (round(px(x)), label)  # the same alert on eight ranks: one label
            if key in shown_marks:
                continue
            shown_marks.add(key)
            # right-aligned at the line: its extent is [x - w, x]; rows stack up from the bottom
            w = _text_w(label)
            row = _free_row(mark_rows, px(x) - 3 - w, w, max_rows=max(1, int(plot_h // 24)))
            if row is not None:
                out.append(f'<text x="{px(x) - 3:.1f}" y="{top + plot_h - 4 - 11 * row}" fill="#d62728" '
                           f'text-anchor="end" font-size="10">{escape(label)}</text>')
    for k, s in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        pts = " ".join(f"{px(x):.1f},{py(v):.1f}" for x, v in s.points)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        if s.markers:
            out.extend(f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>' for x, v in s.points)
    lx, ly = left, top + plot_h + 24
    for k, s in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        out.append(
            f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 14}" y="{ly + 9}">{escape(s.name)}</text>'
        )
        lx += 24 + 7 * len(s.name)
        if lx > width - 120 and k + 1 < len(series):
            lx, ly = left, ly + 13
    out.append("</svg>")
    return "\n".join(out)
