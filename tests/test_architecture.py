"""The floors of the house, drawn from the imports: no circle, no arrow that runs upwards.

Floors, lowest first:
  ground    events, bus, controls, common/        the contract and helpers every floor may use
  rooms     server/ bench/ logwatch/ telemetry/   sources
            record/                               sinks (recorder, printer, report) and the replay source
            trials/                               runs sources for a plan
            slurm/                                runs a plan's trials as Slurm jobs (trials --slurm)
  session   session.py                            wires sources to the sinks it owns
  frontend  tui/                                  the dashboard; sees the session as controls.SessionView
  top       commands/ cli.py __main__.py          parse arguments, pick the frontend
  apart     sim/                                  the stand-ins: speak the event contract, nothing else
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tuiapp"
GROUND = {"events", "bus", "controls", "common", "__init__"}
SOURCES = {"server", "bench", "logwatch", "telemetry"}
SINKS = {"record"}


def _imports() -> dict[str, set[str]]:
    """module path (tuiapp.x.y) -> every module it imports, at any depth of the file."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module != "tuiapp":  # ``from tuiapp import events``: what is named counts
                    found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[module] = found
    return graph


GRAPH = _imports()


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _ours(names: set[str]) -> set[str]:
    return {n for n in names if n == "tuiapp" or n.startswith("tuiapp.")}


def _violations(rule) -> list[str]:
    return sorted(f"{m} imports {n}" for m, names in GRAPH.items() for n in names if rule(_room(m), m, n))


ROOMS = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}


def _target_room(name: str) -> str | None:
    """The room a ``tuiapp.*`` import lands in (``from tuiapp import __version__``: the package)."""
    if name != "tuiapp" and not name.startswith("tuiapp."):
        return None
    room = _room(name)
    return room if room in ROOMS else "__init__"


def test_the_graph_is_read():
    # A parser that finds nothing would pass every rule below.
    assert len(GRAPH) > 50 and "tuiapp.session" in GRAPH["tuiapp.commands.frontend"]


def test_only_the_tui_imports_textual_and_only_the_top_floor_imports_the_tui():
    assert _violations(lambda room, m, n: (n == "textual" or n.startswith("textual."))
                       and room != "tui") == []
    assert _violations(lambda room, m, n: _target_room(n) == "tui" and room not in ("tui", "commands")) == []


def test_the_simulator_speaks_only_the_event_contract():
    assert _violations(lambda room, m, n: room == "sim" and _target_room(n) not in (None, "sim", "events")) == []


def test_the_ground_floor_imports_nothing_above_it():
    assert _violations(lambda room, m, n: room in GROUND and _target_room(n) not in (None, *GROUND)) == []


def test_sources_import_no_sinks_trials_session_or_frontend():
    assert _violations(lambda room, m, n: room in SOURCES
                       and _target_room(n) in (*SINKS, "trials", "session", "tui", "commands", "cli")) == []


def test_sinks_import_no_sources():
    # record/replay.py is the replay source: it reads recordings, never a live source.
    assert _violations(lambda room, m, n: room in SINKS and _target_room(n) in (*SOURCES, "trials")) == []


def test_the_tui_sees_a_protocol_not_the_session_nor_the_sources():
    assert _violations(lambda room, m, n: room == "tui"
                       and _target_room(n) in ("session", *SOURCES, "trials", "commands", "cli")) == []


def test_nothing_below_the_top_floor_imports_a_command():
    assert _violations(lambda room, m, n: _target_room(n) in ("commands", "cli", "__main__")
                       and room not in ("commands", "cli", "__main__")) == []


def test_only_the_top_floor_runs_trials_on_slurm():
    assert _violations(lambda room, m, n: _target_room(n) == "slurm" and room not in ("slurm", "commands")) == []


def test_the_session_picks_no_frontend():
    assert _violations(lambda room, m, n: room == "session" and _target_room(n) in ("tui", "commands")) == []


def test_no_circle_between_rooms():
    edges = {(_room(m), _target_room(n)) for m, names in GRAPH.items() for n in _ours(names)
             if _target_room(n) not in (None, _room(m))}
    rooms = {a for a, _ in edges} | {b for _, b in edges}
    reach = {r: {b for a, b in edges if a == r} for r in rooms}
    changed = True
    while changed:
        changed = False
        for r in rooms:
            more = set().union(*(reach[x] for x in reach[r])) - reach[r]
            if more:
                reach[r] |= more
                changed = True
    assert sorted(r for r in rooms if r in reach[r]) == []
