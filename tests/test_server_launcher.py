import asyncio
import os
import socket
import stat
import sys
import time
from pathlib import Path

import psutil
import pytest

from tuiapp.events import ServerState
from tuiapp.server.launcher import LaunchError, ServerProcess
from tuiapp.server.output import READY_LINE
from tuiapp.server.ports import free_port

FAKE = str(Path(__file__).parent / "data" / "server" / "fake_server.py")


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def recorded_pids(pid_file: Path) -> dict[str, tuple[int, int]]:
    rows = [line.split() for line in pid_file.read_text().splitlines() if line.strip()]
    return {role: (int(pid), int(pgid)) for pid, pgid, role in rows}


async def wait_for(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def make(args: list[str], tmp_path: Path, **kw) -> tuple[ServerProcess, list[ServerState], list[bytes]]:
    events: list[ServerState] = []
    chunks: list[bytes] = []
    port = free_port()
    argv = [sys.executable, FAKE, "--port", str(port), *args]
    kw.setdefault("log_path", tmp_path / "server.log")
    server = ServerProcess(argv, publish=events.append, on_output=chunks.append, **kw)
    return server, events, chunks


async def test_ready_by_line_then_stop_publishes_lifecycle(tmp_path):
    pid_file = tmp_path / "pids"
    server, events, chunks = make(["--pid-file", str(pid_file), "--ranks", "2"], tmp_path)
    await server.start()
    assert server.pid is not None and running(server.pid)
    assert await server.wait_ready()
    assert server.startup_s is not None and server.startup_s > 0
    await wait_for(lambda: len(recorded_pids(pid_file)) == 3)
    code = await server.stop(sigint_timeout_s=5)
    assert code == 0  # the fake handles SIGINT and exits cleanly
    assert [e.state for e in events] == ["starting", "ready", "stopping", "stopped"]
    assert events[0].pid == server.pid and events[-1].exit_code == 0
    assert events[1].startup_s == server.startup_s
    assert READY_LINE in b"".join(chunks)
    for pid, _pgid in recorded_pids(pid_file).values():
        assert not running(pid)
    assert (tmp_path / "server.log").read_bytes() == b"".join(chunks)


async def test_ready_by_health_endpoint(tmp_path):
    server, events, _ = make(["--no-ready-line", "--health-after", "0.6"], tmp_path)
    await server.start()
    assert await server.wait_ready()
    assert events[-1].state == "ready" and "/health" in events[-1].message
    assert server.startup_s >= 0.6
    await server.stop(sigint_timeout_s=5)


async def test_readiness_timeout_is_a_failure_and_the_server_can_still_be_stopped(tmp_path):
    server, events, _ = make(["--no-ready-line"], tmp_path, ready_timeout_s=1.0)
    await server.start()
    assert not await server.wait_ready()
    assert events[-1].state == "failed" and events[-1].message == "not ready after 1 s"
    assert running(server.pid)
    await server.stop(sigint_timeout_s=5)
    assert not running(server.pid)
    assert events[-1].state == "stopped"


async def test_a_ready_line_the_loop_reads_after_the_deadline_is_no_ready_in_time(tmp_path):
    # the loop stalled (a busy box) past the ready timeout while the server came up: whichever of
    # the two it gets to first, the server was not ready within its timeout
    server, events, _ = make(["--ready-after", "0.2"], tmp_path, ready_timeout_s=0.05)
    await server.start()
    time.sleep(0.6)  # (blocks the loop: the ready line is printed meanwhile, and read only after)
    assert not await server.wait_ready()
    assert events[-1].state == "failed" and events[-1].message == "not ready after 0.05 s"
    assert not any(e.state == "ready" for e in events)
    await server.stop(sigint_timeout_s=5)


async def test_exit_while_starting_is_a_failed_start_with_its_cause(tmp_path):
    pid_file = tmp_path / "pids"
    server, events, _ = make(["--fail-after", "0.3", "--ready-after", "30", "--ranks", "2",
                              "--pid-file", str(pid_file)], tmp_path)
    await server.start()
    assert not await server.wait_ready()
    failed = events[-1]
    assert failed.state == "failed" and failed.exit_code == 3
    assert failed.message == "AssertionError: fake rank failure for the test"
    assert await server.wait() == 3
    assert await server.stop() == 3  # stopping an exited server is harmless
    assert [e.state for e in events] == ["starting", "failed"]
    ranks = [pid for role, (pid, _) in recorded_pids(pid_file).items() if role.startswith("rank")]
    assert len(ranks) == 2 and not any(running(pid) for pid in ranks)  # its ranks did not outlive it


@pytest.mark.slow
async def test_stop_kills_a_server_and_grandchildren_that_ignore_sigint_and_sigterm(tmp_path):
    pid_file = tmp_path / "pids"
    server, events, _ = make(["--pid-file", str(pid_file), "--stubborn", "--ranks", "1"], tmp_path)
    await server.start()
    assert await server.wait_ready()
    await wait_for(lambda: pid_file.exists() and len(recorded_pids(pid_file)) == 4)
    pids = recorded_pids(pid_file)
    assert pids["escaped"][1] != server.pid  # it left the server's process group
    await asyncio.sleep(1.2)  # let the launcher's periodic tree walk see every process
    t0 = time.monotonic()
    code = await server.stop(sigint_timeout_s=0.3, sigterm_timeout_s=0.3)
    assert code == -9  # only SIGKILL ended it
    assert time.monotonic() - t0 < 5
    for role, (pid, _) in pids.items():
        assert not running(pid), role
    assert server.alive_pids() == []
    assert events[-1].state == "stopped" and events[-1].exit_code == -9 and events[-1].message == ""


async def test_port_in_use_is_reported_before_launch(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        events: list[ServerState] = []
        server = ServerProcess([sys.executable, FAKE, "--port", str(port)], publish=events.append)
        with pytest.raises(LaunchError, match=f"port {port} .* already in use"):
            await server.start()
    assert server.pid is None and events == []


def test_free_port_is_outside_the_kernels_ephemeral_ports_and_skips_taken_ones(monkeypatch):
    # the kernel gives ephemeral ports to client sockets and bind(0): a test server on one
    # can find it taken, or another server answering /health on it
    low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {free_port() for _ in range(20)}
    assert all(not low <= port <= high for port in ports)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr("tuiapp.server.ports._PICK_PORTS", range(busy, busy + 1))
        port = free_port()  # the one port to pick is taken: the kernel chooses
        assert port != busy
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


async def test_missing_executable_is_a_launch_error(tmp_path):
    server = ServerProcess(["no-such-sglang-binary", "--port", str(free_port())], publish=lambda e: None)
    with pytest.raises(LaunchError, match="server command not found: no-such-sglang-binary"):
        await server.start()


async def test_secrets_never_reach_the_log_file_or_the_output_feed(tmp_path, monkeypatch):
    api_key = "sk-test-4f9a1c7e2b"
    hf_token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    monkeypatch.setenv("HF_TOKEN", hf_token)
    server, events, chunks = make(["--api-key", api_key, "--echo-secrets"], tmp_path)
    await server.start()
    assert await server.wait_ready()
    await server.stop(sigint_timeout_s=5)
    logged = (tmp_path / "server.log").read_bytes()
    fed = b"".join(chunks)
    assert b"api_key='***'" in logged and b"HF_TOKEN=***" in logged
    for secret in (api_key, hf_token):
        assert secret.encode() not in logged
        assert secret.encode() not in fed
        assert all(secret not in e.model_dump_json() for e in events)
    assert stat.S_IMODE(os.stat(tmp_path / "server.log").st_mode) == 0o600


async def test_log_file_is_created_private_even_if_it_existed(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("old run\n")
    log.chmod(0o644)
    server, _, _ = make([], tmp_path, log_path=log)
    await server.start()
    await server.wait_ready()
    await server.stop(sigint_timeout_s=5)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert b"old run" not in log.read_bytes()


@pytest.mark.parametrize("output_in_loop", [True, False])
@pytest.mark.slow
async def test_output_is_drained_while_the_event_loop_is_blocked(tmp_path, output_in_loop):
    # 30,000 lines (~5 MB) is far more than a pipe holds: if the event loop did the
    # reading, the fake server would stall until the loop came back.
    done_file = tmp_path / "flood_done"
    server, _, chunks = make(
        ["--ready-after", "0", "--flood", "30000", "--flood-done-file", str(done_file)], tmp_path,
        output_in_loop=output_in_loop,
    )
    await server.start()
    blocked_until = time.time() + 2.5
    time.sleep(2.5)  # noqa: ASYNC251 - deliberately block the loop, like a slow UI frame
    await wait_for(done_file.exists)
    assert float(done_file.read_text()) < blocked_until
    await server.stop(sigint_timeout_s=5)
    text = b"".join(chunks)
    assert text.count(b"Decode batch,") == 30000
    assert b"n=29999\n" in text
    assert (tmp_path / "server.log").read_bytes() == text
