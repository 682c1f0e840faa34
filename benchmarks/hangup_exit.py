"""How fast an SSH drop ends the dashboard and its server: a real pty, closed under a running
`tuiapp launch` (the simulator as server), in the three ways a terminal goes away.

Reuses the pty helpers of tests/test_tui_hangup.py (that test asserts the 5 s limit; this
prints the times).

    .venv/bin/python benchmarks/hangup_exit.py [--runs 3]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_tui_hangup import Pty, _gone, _launch_argv, _spawn, _tuiapp_and_server  # noqa: E402

WAYS = ["session-leader", "child-of-hup-ignoring-shell", "no-controlling-tty"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    worst_s = 0.0
    for how in WAYS:
        times = []
        for _ in range(args.runs):
            tmp = Path(tempfile.mkdtemp(prefix="tuiapp-hangup-"))
            pty = Pty()
            argv = _launch_argv(tmp)
            if how == "child-of-hup-ignoring-shell":
                argv = ["sh", "-c", f"trap '' HUP; {shlex.join(argv)}"]
            proc = _spawn(argv, pty, controlling=how != "no-controlling-tty")
            app, server = _tuiapp_and_server(psutil.Process(proc.pid))
            pty.wait_for(b"READY", 60)
            time.sleep(1.0)
            t0 = time.monotonic()
            pty.hang_up()
            while not (_gone(app) and _gone(server)) and time.monotonic() - t0 < 30:
                time.sleep(0.01)
            times.append(time.monotonic() - t0)
            proc.wait(10)
        worst_s = max(worst_s, *times)
        print(f"{how:30s} gone after " + ", ".join(f"{t:.2f}" for t in times) + " s")
    print(f"worst {worst_s:.2f} s (limit 5 s)")
    return 0 if worst_s <= 5 else 1


if __name__ == "__main__":
    sys.exit(main())
