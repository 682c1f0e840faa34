"""What the dashboard's frames cost, counted rather than timed: layout passes, restyles and
panel renders of a live session, with what asked for each.

    .venv/bin/python benchmarks/dashboard_counts.py [--size 100x30] [--seconds 20] [--warmup 8]
                                                    [--demo] [--baseline-tree DIR] [--top 8]

``attach URL --telemetry sim --concurrency 1`` against the simulator started here (as
``benchmarks/app_cpu.py`` runs it), or with ``--demo`` the whole demo campaign, on a pty of
the given size; the tuiapp process counts, in the measured window (attach: after the
warm-up; demo: the whole campaign):

- layout passes (``Screen._refresh_layout``) and the widgets that asked for them;
- restyles (``App.update_styles``): of the whole screen, and of one widget and its children;
- refreshes and content renders (``_render_content``) per widget, and who asked;
- ``Widget.render_lines`` calls and the rows they render (what a partial update renders);
- frames (compositor updates).

``COUNTS_WHO_RENDERS=1`` also names who asked for each render; ``COUNTS_PROFILE=1`` writes a
cProfile of the tuiapp's main thread (with ``--keep PREFIX``: PREFIX<tree>.prof) for a look at
where the time goes (it slows the app, so its counts are not the figures).

Counts do not depend on how busy the box is the way CPU figures do (a slow box may merge
two frames, so they move by a few, not by a factor): compare a change's counts with the
baseline tree's (``--baseline-tree``, as app_cpu.py's) in one run. The counters patch
Textual's internals in the measured process only (after tuiapp's own checks of them, so its
fast paths stay on); the dashboard runs unchanged.

docs/dashboard.md (CPU) has the counts of this dashboard against the one before its layouts.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHO_RENDERS = bool(os.environ.get("COUNTS_WHO_RENDERS"))  # who asked for each render (slower)


def _caller() -> str:
    """Who asked: the innermost frame of tuiapp's own code that led here, and when that is
    Textual's loop (a message handler, a style applied), Textual's two innermost frames."""
    stack = traceback.extract_stack()[:-2]
    textual = []
    for frame in reversed(stack):
        name = frame.filename
        if "/tuiapp/" in name and "dashboard_counts" not in name:
            short = name.split("/tuiapp/", 1)[1]
            if frame.name == "run_app" and textual:
                return " < ".join(textual[:3])
            return f"{short}:{frame.lineno} {frame.name}"
        if "/textual/" in name and "dashboard_counts" not in name:
            textual.append(f"{name.split('/textual/', 1)[1]}:{frame.name}")
    return " < ".join(textual[:3]) or "?"


def _label(node) -> str:
    return f"{type(node).__name__}#{node.id}" if getattr(node, "id", None) else type(node).__name__


def install(out_path: str) -> None:
    """Patch Textual in this process to count; the counts go to ``out_path`` at exit."""
    try:  # its checks of Textual's internals first: they must see Textual's own methods
        import tuiapp.tui.textual_private  # noqa: F401
    except ImportError:
        pass
    from textual.app import App
    from textual.screen import Screen
    from textual.widget import Widget

    # (monotonic s, kind, what, who asked[, how many: rows for render_lines])
    events: list[tuple] = []
    pending_layout: list[str] = []

    refresh_layout = Screen._refresh_layout

    def counted_refresh_layout(self, size=None, scroll=False):
        if self is self.app.screen_stack[0]:
            why = ",".join(sorted(set(pending_layout))) or ("scroll" if scroll else "resize/other")
            events.append((time.monotonic(), "layout", why, ""))
            pending_layout.clear()
        return refresh_layout(self, size, scroll)

    Screen._refresh_layout = counted_refresh_layout

    on_layout = Screen._on_layout

    async def counted_on_layout(self, message):
        pending_layout.append(_label(message.widget))
        return await on_layout(self, message)

    Screen._on_layout = counted_on_layout

    refresh = Widget.refresh

    def counted_refresh(self, *regions, repaint=True, layout=False, recompose=False):
        events.append((time.monotonic(), "refresh_layout" if layout else "refresh", _label(self), _caller()))
        return refresh(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    Widget.refresh = counted_refresh

    update_styles = App.update_styles

    def counted_update_styles(self, node, animate=True):
        kind = "restyle_screen" if isinstance(node, (Screen, App)) else "restyle_widget"
        events.append((time.monotonic(), kind, _label(node), _caller()))
        return update_styles(self, node, animate)

    App.update_styles = counted_update_styles

    def count_render(cls) -> None:
        original = cls.__dict__["_render_content"]

        def counted_render_content(self):
            events.append((time.monotonic(), "render", _label(self), _caller() if WHO_RENDERS else ""))
            return original(self)

        cls._render_content = counted_render_content

    count_render(Widget)
    try:
        from tuiapp.tui.widgets.panel import Panel

        if "_render_content" in Panel.__dict__:
            count_render(Panel)
    except ImportError:
        pass

    render_lines = Widget.render_lines

    def counted_render_lines(self, crop):
        events.append((time.monotonic(), "render_lines", _label(self), "", crop.height))
        return render_lines(self, crop)

    Widget.render_lines = counted_render_lines

    compositor_refresh = Screen._compositor_refresh

    def counted_compositor_refresh(self):
        events.append((time.monotonic(), "frame", _label(self), ""))
        return compositor_refresh(self)

    Screen._compositor_refresh = counted_compositor_refresh

    t0 = time.monotonic()
    profiler = None
    if os.environ.get("COUNTS_PROFILE"):  # cProfile of the main thread, for a look (it slows the app)
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()

    def dump() -> None:
        Path(out_path).write_text(json.dumps({"t0": t0, "events": events}))
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(out_path + ".prof")

    atexit.register(dump)


def _child_argv(out_path: str, argv: list[str]) -> list[str]:
    code = (f"import sys, runpy; sys.path.insert(0, {str(HERE)!r}); import dashboard_counts as d; "
            f"d.install({out_path!r}); sys.argv = ['tuiapp', *{argv!r}]; "
            "runpy.run_module('tuiapp', run_name='__main__')")
    return [sys.executable, "-c", code]


def summarise(data: dict, start_s: float, end_s: float, top: int) -> dict:
    window = [e for e in data["events"] if start_s <= e[0] - data["t0"] <= end_s]
    seconds = end_s - start_s
    kinds = collections.Counter(e[1] for e in window)
    kinds["rows_rendered"] = sum(e[4] for e in window if e[1] == "render_lines")
    detail: dict[str, collections.Counter] = {}
    for _t, kind, what, who, *n in window:
        key = f"{what} <- {who}" if who else what
        detail.setdefault(kind, collections.Counter())[key] += 1
        if n:
            detail.setdefault("rows_rendered", collections.Counter())[key] += n[0]
    return {"seconds": seconds, "counts": dict(kinds),
            "top": {k: c.most_common(top) for k, c in detail.items()}}


def show(name: str, summary: dict) -> None:
    s = summary["seconds"]
    c = summary["counts"]
    print(f"{name}: {s:.0f} s | layout passes {c.get('layout', 0)} | whole-screen restyles "
          f"{c.get('restyle_screen', 0)} | widget restyles {c.get('restyle_widget', 0)} | "
          f"renders {c.get('render', 0)} | render_lines {c.get('render_lines', 0)} ({c.get('rows_rendered', 0)} rows) | "
          f"frames {c.get('frame', 0)} | refresh(layout=True) {c.get('refresh_layout', 0)}", flush=True)
    for kind in ("layout", "refresh_layout", "restyle_screen", "restyle_widget", "render", "refresh",
                 "rows_rendered"):
        for what, n in summary["top"].get(kind, []):
            print(f"    {kind:<15} {n:5d}  {what}")


def run_one(args, tree: Path | None) -> dict:
    import app_cpu

    app_cpu.TREE = tree
    cols, rows = (int(x) for x in args.size.lower().split("x"))
    work = Path(tempfile.mkdtemp(prefix="dashboard_counts_"))
    out = work / "counts.json"
    if args.demo:
        ledger = work / "ledger.json"
        from tuiapp.trials.plan import load_plan
        from tuiapp.trials.plans import plan_path

        n_trials = len(load_plan(plan_path("campaign")).all())
        app = app_cpu.App(_child_argv(str(out), ["demo", "--ledger", str(ledger)]), (cols, rows), work)
        t0 = time.monotonic()
        while time.monotonic() < t0 + args.demo_limit and app.alive():
            if app_cpu._ledger_trials(ledger) >= n_trials:
                break
            time.sleep(0.2)
        end = time.monotonic() - t0
        start = 0.0
    else:
        app = app_cpu.App(_child_argv(str(out), ["attach", SIM.url, "--telemetry", "sim", "--concurrency", "1"]),
                          (cols, rows), work)
        time.sleep(args.warmup + args.seconds + 1.5)  # q after the window (the child starts later)
        start, end = args.warmup, args.warmup + args.seconds
    app.stop()
    data = json.loads(out.read_text())
    if args.keep:
        Path(args.keep + (tree.name if tree else "this") + ".json").write_text(out.read_text())
        prof = Path(str(out) + ".prof")
        if prof.exists():
            Path(args.keep + (tree.name if tree else "this") + ".prof").write_bytes(prof.read_bytes())
    return summarise(data, start, end, args.top)


SIM = None


def main() -> None:
    global SIM
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="100x30")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--demo", action="store_true", help="the whole demo campaign instead of attach")
    ap.add_argument("--demo-limit", type=float, default=400.0)
    ap.add_argument("--baseline-tree", metavar="DIR")
    ap.add_argument("--top", type=int, default=8, help="the most frequent askers shown per kind")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--keep", metavar="PREFIX", help="keep each run's raw events as PREFIX<tree>.json")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    results = {}
    trees = [("before", Path(args.baseline_tree).resolve())] if args.baseline_tree else []
    trees.append(("after" if trees else "this tree", None))
    if not args.demo:
        import app_cpu

        from tuiapp.sim.process import SimProcess

        SIM = SimProcess(app_cpu.SIM_ARGS, speed=20)
        SIM.wait_ready(60)
    try:
        for name, tree in trees:
            label = f"{name} {'demo' if args.demo else 'attach c=1'} {args.size}"
            results[label] = run_one(args, tree)
            show(label, results[label])
    finally:
        if SIM is not None:
            SIM.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
