"""The server-output pump reads a burst of writes in few reads, and a lone line at once."""

from __future__ import annotations

import os
import time

from tuiapp.common.redact import Redactor
from tuiapp.server.output import COALESCE_S, OutputPump


def _pump(fd: int) -> tuple[OutputPump, list[tuple[float, bytes]]]:
    got: list[tuple[float, bytes]] = []
    pump = OutputPump(fd, redactor=Redactor([]), log_fd=None,
                      on_output=lambda data: got.append((time.monotonic(), data)), on_ready_line=lambda: None)
    pump.start()
    return pump, got


def test_a_burst_of_writes_comes_in_a_few_reads() -> None:
    r, w = os.pipe()
    pump, got = _pump(r)
    for i in range(40):  # 8 ranks x 5 lines, 2 ms apart: one start-up burst
        os.write(w, f"[TP{i % 8}] line {i}\n".encode())
        time.sleep(0.002)
    os.close(w)
    assert pump.join(5)
    assert b"".join(d for _, d in got).count(b"\n") == 40  # nothing lost, in order
    assert b"".join(d for _, d in got).decode().splitlines()[-1] == "[TP7] line 39"
    assert len(got) <= 15  # one read per write was ~40


def test_a_lone_line_is_read_at_once() -> None:
    r, w = os.pipe()
    pump, got = _pump(r)
    lags = []
    for i in range(5):  # the steady state: a Decode line every few hundred ms
        time.sleep(0.15)
        sent = time.monotonic()
        os.write(w, f"Decode batch {i}\n".encode())
        while len(got) <= i:
            time.sleep(0.001)
        lags.append(got[i][0] - sent)
    os.close(w)
    assert pump.join(5)
    # read as it comes, not held for the burst wait (generous: a loaded CI box)
    assert sorted(lags)[2] < COALESCE_S
