"""Server states for attach (tuiapp/server/states.py): a starting server is waited for, a lost
one raises an incident at once and a headless job gives up after --server-wait-s, a
restarted one resumes; the gap is marked in the recording. Against the simulator, as a user
runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tuiapp.events import Alert, BenchState, LogLine, Note, RunDone, ServerState
from tuiapp.record.reading import read_recording
from tuiapp.server.ports import free_port
from tuiapp.server.states import ServerWatch, readiness, starting_reason

pytestmark = pytest.mark.slow


def start_testserver(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", str(port), "--step-ms", "2",
                             "--prefill-ms", "2"], stdout=subprocess.PIPE, text=True)
    assert "listening" in proc.stdout.readline()
    return proc


def read_until(proc: subprocess.Popen, needle: str, lines: list[str], limit_s: float = 60) -> str:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return line
    raise AssertionError(f"no {needle!r} in: {''.join(lines)[-3000:]}")


def end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def test_starting_server_is_waited_for_and_a_killed_one_gives_up(tmp_path: Path) -> None:
    """attach before the simulator listens (refused), while it starts (503), then benchmark;
    kill -9: a crash incident at once, header state unreachable, exit 1 after --server-wait-s."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    record = tmp_path / "rec.jsonl"
    attach = subprocess.Popen(
        [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off", "--max-new-tokens", "8",
         "--ready-timeout", "90", "--server-wait-s", "1.5", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sim = None
    try:
        first = attach.stderr.readline()  # it waits for a server that is not there yet
        assert first.startswith(f"tuiapp attach: waiting for {url} to be ready: Connection refused"), first
        sim = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "20", "--port", str(port),
                                "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lines: list[str] = []
        read_until(attach, " run ", lines, limit_s=90)
        killed_t = time.time()
        os.kill(sim.pid, signal.SIGKILL)
        sim.wait(10)
        out, err = attach.communicate(timeout=60)
    finally:
        end(attach)
        if sim is not None:
            end(sim)
    assert attach.returncode == 1, err
    # the progress lines while it started, then one line for why it gave up
    err_lines = err.strip().splitlines()
    assert any("503" in ln for ln in err_lines), err  # the simulator said it was starting
    assert err_lines[-1].startswith("tuiapp attach: error: server unreachable for 1.5 s (--server-wait-s): "), err
    assert "Traceback" not in err
    events = read_recording(record).events
    states = [e.state for e in events if isinstance(e, ServerState)]
    assert states[:1] == ["running"] and "unreachable" in states
    crash = [e for e in events if isinstance(e, Alert) and e.alert_kind == "crash"]
    assert crash and "refuses connections" in crash[0].message and url in crash[0].message
    assert crash[0].t_s - killed_t < 2.0  # the incident within 2 s of the kill
    assert any(isinstance(e, Note) and "giving up" in e.text for e in events)


def test_a_restarted_server_resumes_and_the_gap_is_marked(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    record = tmp_path / "rec.jsonl"
    server = start_testserver(port)
    attach = subprocess.Popen(
        [sys.executable, "-m", "tuiapp", "attach", url, "--headless", "--telemetry", "off", "--max-new-tokens", "8",
         "--runs", "40", "--server-wait-s", "30", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        read_until(attach, " run ", lines)
        server.kill()
        server.wait(10)
        read_until(attach, "unreachable", lines)
        server = start_testserver(port)
        out, err = attach.communicate(timeout=90)
    finally:
        end(attach)
        end(server)
    assert attach.returncode == 0, err
    events = read_recording(record).events
    states = [(e.state, e.message) for e in events if isinstance(e, ServerState)]
    lost = next(i for i, (s, _) in enumerate(states) if s == "unreachable")
    assert states[lost + 1][0] == "running" and states[lost + 1][1].startswith("back after ")
    alerts = [e for e in events if isinstance(e, Alert) and e.alert_kind == "crash"]
    assert [a.severity for a in alerts] == ["error", "warning"] and alerts[0].alert_id == alerts[1].alert_id
    assert "back after" in alerts[1].message
    assert any(isinstance(e, Note) and e.text.startswith("server back after") for e in events)
    assert len([e for e in events if isinstance(e, RunDone)]) == 40
    assert [e.state for e in events if isinstance(e, BenchState)][-1] == "done"


# ---------------------------------------------------------------- the rules themselves


@pytest.mark.parametrize(("status", "body", "starting"), [
    (503, "", True), (503, '{"detail": "Server is starting"}', True), (200, '{"status": "starting"}', True),
    (200, "", False), (200, '{"status": "ok"}', False), (404, "Not Found", False), (500, "boom", False),
])
def test_what_counts_as_starting(status, body, starting):
    assert (starting_reason(status, body) is not None) is starting


async def test_readiness_of_a_server_and_of_none(fake_sglang):
    srv = await fake_sglang()
    async with httpx.AsyncClient() as client:
        assert await readiness(client, srv.url) is None
    port = srv.port
    await srv.stop()
    async with httpx.AsyncClient() as client:
        assert await readiness(client, f"http://127.0.0.1:{port}") == "Connection refused"


def test_the_watch_carries_the_logs_last_lines_and_gives_up_once():
    events: list = []
    watch = ServerWatch(events.append, "http://h:1", wait_s=3600)
    tapped = watch.tap(events.append)
    for n in range(15):
        tapped(LogLine(line_no=n + 1, text=f"line {n}"))
    watch.lost("Connection refused")
    watch.lost("Connection refused")  # the other workers' failures are the same outage
    alert = next(e for e in events if isinstance(e, Alert))
    assert alert.traceback.splitlines() == [f"line {n}" for n in range(5, 15)]
    assert [e.state for e in events if isinstance(e, ServerState)] == ["unreachable"]
    assert not watch.gave_up() and watch.remaining_s() > 3000
    watch.wait_s = 0.0  # its time is up
    assert watch.gave_up() and watch.gave_up()
    assert len([e for e in events if isinstance(e, Note)]) == 1
    assert watch.gave_up_reason == "server unreachable for 0 s (--server-wait-s): Connection refused"
    unbounded = ServerWatch(events.append, "http://h:1", wait_s=None)
    unbounded.lost("Connection refused")
    assert not unbounded.gave_up() and unbounded.remaining_s() is None


# ---------------------------------------------------------------- the exit code of a job


class _Loop:
    """What attach's verdict reads of a finished BenchLoop."""

    def __init__(self, settings, points, decode=(90.0,), gave_up=None):
        from types import SimpleNamespace

        from tuiapp.server.states import ServerWatch

        self.settings, self.points = settings, points
        # a run per decode figure, each with a request served
        self.results = [SimpleNamespace(requests=4, errors=0, decode_tok_s=d) for d in decode]
        self.watch = ServerWatch(lambda _e: None, "http://h:1")
        self.watch.gave_up_reason = gave_up


def _point(i, requests, errors):
    from tuiapp.events import PointDone

    return PointDone(point_index=i, runs=1, requests=requests, errors=errors, duration_s=1.0)


@pytest.mark.parametrize(("sweep", "points", "decode", "gave_up", "failed"), [
    (None, [(0, 4, 0)], (90.0,), None, None),
    (None, [(0, 4, 0)], (90.0,), "server unreachable for 60 s", "server unreachable for 60 s"),
    (None, [], (), None, "no request of any run succeeded"),
    ("concurrency=1,2,4", [(0, 4, 0), (1, 4, 4), (2, 4, 1)], (90.0,), None, "1 of 3 load points lost"),
    ("concurrency=1,2,4", [(0, 4, 0)], (90.0,), None, "2 of 3 load points lost"),
    ("concurrency=1,2,4", [(0, 4, 0), (1, 4, 0), (2, 4, 3)], (90.0,), None, None),
])
def test_a_job_with_lost_points_never_exits_0(sweep, points, decode, gave_up, failed):
    from tuiapp.bench.settings import BenchSettings
    from tuiapp.commands.attach import _failure

    settings = BenchSettings(sweep=sweep) if sweep else BenchSettings()
    why = _failure(_Loop(settings, [_point(*p) for p in points], decode, gave_up))
    assert (why is None) is (failed is None) and (failed is None or why.startswith(failed)), why


def test_a_search_with_an_empty_probe_fails():
    from tuiapp.bench.settings import BenchSettings
    from tuiapp.commands.attach import _failure

    s = BenchSettings(find_max_load=True, slo_ttft_ms=100.0)
    assert _failure(_Loop(s, [_point(0, 4, 0), _point(1, 4, 0)])) is None
    assert "--find-max-load" in _failure(_Loop(s, [_point(0, 4, 0), _point(1, 4, 4)]))


async def test_launch_says_what_it_waits_for_while_the_server_starts(monkeypatch, tmp_path):
    """A launched server that is still starting (the simulator answers 503 before its modelled
    uvicorn start): progress notes, then stopped cleanly."""
    import asyncio

    from tuiapp.server import launcher

    monkeypatch.setattr(launcher, "PROGRESS_FIRST_S", 0.3)
    monkeypatch.setattr(launcher, "PROGRESS_EVERY_S", 0.4)
    events: list = []
    server = launcher.ServerProcess(
        [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "0.5", "--port", str(free_port()),
         "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"],
        publish=events.append, log_path=tmp_path / "server.log", ready_timeout_s=600)
    await server.start()
    try:
        waiting = asyncio.ensure_future(server.wait_ready())
        for _ in range(100):
            if len([e for e in events if isinstance(e, Note)]) >= 2:
                break
            await asyncio.sleep(0.1)
        waiting.cancel()
    finally:
        await server.stop(sigint_timeout_s=2, sigterm_timeout_s=2)
    notes = [e.text for e in events if isinstance(e, Note)]
    assert len(notes) >= 2 and all(n.startswith("waiting for http://127.0.0.1:") for n in notes), notes
    assert "of 600 s, --ready-timeout)" in notes[0] and ("HTTP 503" in notes[0] or "refused" in notes[0])


async def test_health_up_while_the_model_list_says_starting_is_waited_for(fake_sglang):
    """/health answers 200 while /v1/models still says 503 "Server is starting" (the case
    issue 40 met): not ready until the model list answers."""
    from tuiapp.server.states import wait_until_ready

    srv = await fake_sglang()
    srv.models_starting = 3
    lines: list[str] = []
    async with httpx.AsyncClient() as client:
        await wait_until_ready(client, srv.url, timeout_s=30, progress=lines.append, poll_s=0.01)
    assert srv.models_starting == 0
    assert "to be ready: GET /v1/models: HTTP 503: " in lines[0] and "Server is starting" in lines[0], lines
    assert lines[-1].startswith(f"{srv.url} is ready after ")
