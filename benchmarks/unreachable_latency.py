"""How soon `tuiapp attach` raises the incident for a server killed with kill -9, and how soon a
headless attach gives up (docs/attach.md "Server states").

    .venv/bin/python benchmarks/unreachable_latency.py [--trials 3] [--server-wait-s 3]

Per trial: the simulator at --sim-speed 50, `tuiapp attach URL --headless --record R` until its
first run line, then SIGKILL to the simulator; printed: the recorded `crash` alert's time less
the kill's, and the attach's exit code and time to exit after the kill.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tuiapp.events import Alert  # noqa: E402
from tuiapp.record.reading import read_recording  # noqa: E402
from tuiapp.server.ports import free_port  # noqa: E402


def one(wait_s: float, record: Path) -> tuple[float, int, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    sim = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "50", "--port", str(port),
                            "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    attach = subprocess.Popen([sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off",
                               "--max-new-tokens", "32", "--server-wait-s", str(wait_s), "--record", str(record)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while " run " not in (attach.stdout.readline() or " run "):
            if time.monotonic() > deadline:
                raise SystemExit("no run within 120 s")
        killed_t = time.time()
        os.kill(sim.pid, signal.SIGKILL)
        sim.wait(10)
        attach.communicate(timeout=wait_s + 60)
        exit_after_s = time.time() - killed_t
    finally:
        for proc in (attach, sim):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    crash = next(e for e in read_recording(record).events if isinstance(e, Alert) and e.alert_kind == "crash")
    return crash.t_s - killed_t, attach.returncode, exit_after_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--server-wait-s", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            incident_s, code, exit_s = one(args.server_wait_s, Path(tmp) / f"r{trial}.jsonl")
            print(f"trial {trial}: incident {incident_s * 1000:.1f} ms after kill -9; exit {code} "
                  f"{exit_s:.2f} s after it (--server-wait-s {args.server_wait_s:g})")


if __name__ == "__main__":
    main()
