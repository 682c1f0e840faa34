"""Load curves in reports: a throughput-vs-latency SVG and a table of the points.

x is aggregate output tok/s, y a latency in ms; one line per trial through its points in
load order, p50 solid and p99 dashed, so a configuration that buys throughput with tail
latency shows as a dashed line peeling away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

from tuiapp.common.numfmt import num
from tuiapp.events import PointDone
from tuiapp.record.svg import PALETTE, _fmt, _nice_step


def curves_by_trial(points: Sequence[PointDone]) -> dict[str, list[PointDone]]:
    """Trial name -> its points (the probes of a search included), in load order."""
    out: dict[str, list[PointDone]] = {}
    for p in points:
        out.setdefault(p.trial or "run", []).append(p)
    for pts in out.values():
        pts.sort(key=lambda p: p.request_rate if p.request_rate is not None else (p.concurrency or 0))
    return out


def curve_chart(title: str, points: Sequence[PointDone], *, metric: str = "ttft", width: int = 880,
                height: int = 320) -> str:
    """SVG: ``metric`` (ttft | tpot | e2e) p50 and p99 against output tok/s."""
    curves = curves_by_trial(points)
    series = []
    for name, pts in curves.items():
        for q, dash in (("p50", ""), ("p99", "6 3")):
            xy = [(p.output_tok_s, v) for p in pts
                  if p.output_tok_s is not None and (v := getattr(p, f"{metric}_{q}_ms")) is not None]
            if xy:
                series.append((f"{name} {metric.upper()} {q}", xy, dash, len(series) // 2))
    left, right, top, bottom = 64, 16, 34, 46 + 14 * max(0, (len(series) - 1) // 4)
    plot_w, plot_h = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
           ' font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    xs = [x for _, xy, _, _ in series for x, _ in xy]
    ys = [y for _, xy, _, _ in series for _, y in xy]
    if not xs:
        out.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#666">no data</text></svg>')
        return "\n".join(out)
    xstep, ystep = _nice_step(max(xs) or 1.0, 6), _nice_step(max(ys) or 1.0, 5)
    x_hi, y_hi = math.ceil(max(xs) / xstep) * xstep or xstep, math.ceil(max(ys) / ystep) * ystep or ystep

    def px(x: float) -> float:
        return left + x / x_hi * plot_w

    def py(y: float) -> float:
        return top + plot_h - y / y_hi * plot_h

    k = 0.0
    while k <= y_hi + ystep / 2:
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(k):.1f}" y2="{py(k):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{py(k) + 4:.1f}" text-anchor="end">{_fmt(k)}</text>')
        k += ystep
    k = 0.0
    while k <= x_hi + xstep / 2:
        out.append(f'<text x="{px(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_fmt(k)}</text>')
        k += xstep
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>'
               f'<text x="14" y="{top + plot_h / 2:.1f}" transform="rotate(-90 14 {top + plot_h / 2:.1f})"'
               f' text-anchor="middle">{metric.upper()} ms</text>'
               f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" text-anchor="middle">'
               'aggregate output tok/s</text>')
    lx, ly = left, top + plot_h + 42
    for name, xy, dash, colour_k in series:
        color = PALETTE[colour_k % len(PALETTE)]
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in xy)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash_attr} points="{pts}"/>')
        out.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>' for x, y in xy)
        out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="2"'
                   f'{dash_attr}/><text x="{lx + 20}" y="{ly}">{escape(name)}</text>')
        lx += 30 + 7 * len(name)
        if lx > width - 160:
            lx, ly = left, ly + 14
    out.append("</svg>")
    return "\n".join(out)


def point_rows(points: Sequence[PointDone]) -> list[list[str]]:
    rows = []
    for p in points:
        load = f"{p.request_rate:g} req/s" if p.request_rate is not None else f"c={p.concurrency}"
        achieved = num(p.sent_request_rate, ".2f") if p.request_rate is not None else "-"
        share = f"{p.goodput_share:.0%}" if p.goodput_share is not None else "-"
        rows.append([p.trial or "-", load + (" (search)" if p.search else ""), achieved, str(p.requests),
                     str(p.errors), num(p.output_tok_s, ".1f"), num(p.request_throughput_req_s, ".2f"),
                     f"{num(p.ttft_p50_ms, '.1f')} / {num(p.ttft_p99_ms, '.1f')}",
                     f"{num(p.tpot_p50_ms, '.2f')} / {num(p.tpot_p99_ms, '.2f')}",
                     f"{num(p.e2e_p50_ms, '.0f')} / {num(p.e2e_p99_ms, '.0f')}",
                     num(p.goodput_req_s, ".2f"), share])
    return rows


POINT_HEAD = ["trial", "load", "achieved req/s", "requests", "errors", "output tok/s", "req/s",
              "TTFT p50 / p99 ms", "TPOT p50 / p99 ms", "e2e p50 / p99 ms", "goodput req/s", "met SLO"]
