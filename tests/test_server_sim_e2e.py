"""The launcher and preflight against the simulator, the same code that meets SGLang."""

import sys

import psutil

from tuiapp.server.launcher import ServerProcess
from tuiapp.server.ports import free_port
from tuiapp.server.preflight import preflight


def sim_argv(*flags: str) -> list[str]:
    return [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "20", "--port", str(free_port()),
            "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", *flags]


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_sim_launch_ready_stop_leaves_no_process(tmp_path):
    events, chunks = [], []
    server = ServerProcess(sim_argv("--api-key", "sk-sim-secret-0042"), publish=events.append,
                           on_output=chunks.append, log_path=tmp_path / "sim.log", ready_timeout_s=60)
    await server.start()
    assert await server.wait_ready()
    pid = server.pid
    code = await server.stop()
    assert code is not None and not running(pid) and server.alive_pids() == []
    assert [e.state for e in events] == ["starting", "ready", "stopping", "stopped"]
    log = (tmp_path / "sim.log").read_bytes()
    assert b"The server is fired up and ready to roll!" in log
    assert b"sk-sim-secret-0042" not in log and b"sk-sim-secret-0042" not in b"".join(chunks)


async def test_sim_failed_start_reports_exit_code_and_cause(tmp_path):
    events = []
    # On the campaign's SM120 box FlashInfer's allreduce fusion dies at start.
    server = ServerProcess(sim_argv("--enable-flashinfer-allreduce-fusion"), publish=events.append,
                           ready_timeout_s=60)
    await server.start()
    assert not await server.wait_ready()
    failed = events[-1]
    assert failed.state == "failed" and failed.exit_code not in (None, 0)
    assert failed.message and not failed.message.startswith("[")  # the cause, log prefix stripped
    assert not running(server.pid)


def test_preflight_against_the_simulator_help():
    problems = preflight(sim_argv("--cuda-graph-max-bs-decoed", "8", "--mem-fraction-statik", "0.8"))
    assert {(p.flag, p.suggestion) for p in problems} == {
        ("--cuda-graph-max-bs-decoed", "--cuda-graph-max-bs-decode"),
        ("--mem-fraction-statik", "--mem-fraction-static"),
    }
    assert preflight(sim_argv()) == []
