"""Benchmark: how fast the launcher drains a flooding server (8 ranks logging in bursts).

Run: .venv/bin/python benchmarks/server_output.py [LINES]
Prints, for both delivery modes, when the fake server finished writing (it would stall
if the pipe filled) and when every line had reached ``on_output`` (redacted, also logged).
"""

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from tuiapp.server.launcher import ServerProcess
from tuiapp.server.ports import free_port

FAKE = str(Path(__file__).resolve().parent.parent / "tests" / "data" / "server" / "fake_server.py")


async def run(lines: int, in_loop: bool, tmp: Path) -> None:
    received = [0]
    done = tmp / f"done-{in_loop}"
    server = ServerProcess(
        [sys.executable, FAKE, "--port", str(free_port()), "--ready-after", "0", "--flood", str(lines),
         "--flood-done-file", str(done), "--api-key", "sk-bench-secret-123456"],
        publish=lambda event: None,
        on_output=lambda data: received.__setitem__(0, received[0] + data.count(b"\n")),
        log_path=tmp / "server.log",
        output_in_loop=in_loop,
    )
    t0 = time.time()
    await server.start()
    while not done.exists():
        await asyncio.sleep(0.005)
    writer_done_s = float(done.read_text()) - t0
    while received[0] < lines:
        await asyncio.sleep(0.005)
    received_s = time.time() - t0
    await server.stop(sigint_timeout_s=5)
    print(f"output_in_loop={in_loop}: {lines} lines; writer done {writer_done_s:.2f} s, all received "
          f"{received_s:.2f} s (incl. interpreter start) = {lines / received_s:,.0f} lines/s")


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        for in_loop in (True, False):
            asyncio.run(run(lines, in_loop, Path(tmp)))


if __name__ == "__main__":
    main()
