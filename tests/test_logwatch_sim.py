"""The watcher live on the simulator's output: every failure mode gives the right alerts.

The simulator runs as a real child process (stdout and stderr merged into one pipe, as
the launcher does) and ``LogWatcher.pump`` reads the pipe while it runs.
"""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
import pytest

from tuiapp.events import Alert, ServerState, ServerStats
from tuiapp.logwatch.watcher import LogWatcher
from tuiapp.sim.process import free_port

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
ALL = list(range(8))


async def run_sim(args: list[str], env: dict | None = None, speed: float = 200.0, traffic: bool = False,
                  requests: int = 1, stop_after: bool = False, events_out: list | None = None) -> list[Alert]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tuiapp.sim.server", "--port", str(port), "--sim-speed", str(speed), *BASE, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env={**os.environ, **(env or {})})
    events: list = [] if events_out is None else events_out
    ready = asyncio.Event()

    def publish(e: object) -> None:
        events.append(e)
        if isinstance(e, ServerState) and e.state == "ready":
            ready.set()

    watcher = LogWatcher(publish)
    assert proc.stdout is not None
    pump = asyncio.create_task(watcher.pump(proc.stdout))
    try:
        if traffic or stop_after:
            done, _ = await asyncio.wait([asyncio.create_task(ready.wait()), pump], timeout=30,
                                         return_when=asyncio.FIRST_COMPLETED)
            assert ready.is_set(), "simulator never became ready"
            body = {"text": "go", "sampling_params": {"max_new_tokens": 60, "ignore_eos": True}}
            async with httpx.AsyncClient(timeout=30) as client:
                for _ in range(requests):
                    try:
                        await client.post(f"http://127.0.0.1:{port}/generate", json=body)
                    except httpx.HTTPError:
                        break  # the server died under us, as intended
        if stop_after:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
        await asyncio.wait_for(pump, 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return list({e.alert_id: e for e in events if isinstance(e, Alert)}.values())


def kinds(alerts: list[Alert]) -> list[tuple[str, list[int]]]:
    return [(a.alert_kind, a.ranks) for a in alerts]


def failures_then_death(alerts: list[Alert]) -> list[Alert]:
    """The failures, after checking that the server's death came last, as its own crash
    incident caused by one of them."""
    *failures, death = alerts
    assert death.alert_kind == "crash", kinds(alerts)
    assert death.caused_by in {a.alert_id for a in failures}
    return failures


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["--enable-torch-symm-mem"], None, [("keyerror", ALL)]),
    (["--enable-flashinfer-allreduce-fusion"], None, [("jit_arch", ALL)]),
    ([], {"NCCL_ALGO": "Tree"}, [("nccl", ALL)]),
], ids=["symm_mem_keyerror", "flashinfer_jit", "nccl_tree_graphs"])
async def test_startup_failures(args: list[str], env: dict | None, expected: list) -> None:
    alerts = await run_sim(args, env, speed=50)
    assert kinds(failures_then_death(alerts)) == expected
    assert all(a.severity == "error" for a in alerts)


async def test_ep_flashinfer_assertion_then_oom() -> None:
    alerts = failures_then_death(
        await run_sim(["--moe-runner-backend", "flashinfer_cutlass", "--moe-a2a-backend", "flashinfer"], speed=50))
    assert [a.alert_kind for a in alerts] == ["assertion", "oom"]
    assert sorted(alerts[0].ranks + alerts[1].ranks) == ALL
    assert alerts[0].message.startswith("AssertionError")
    assert alerts[1].message.startswith("torch.OutOfMemoryError: CUDA out of memory.")


@pytest.mark.parametrize(("fault", "expected"), [
    ("oom", [("oom", [3])]),
    ("assertion", [("assertion", [3])]),
    ("decode_oom", [("oom", [0])]),
    ("nccl_timeout", [("nccl", ALL)]),
    ("hang", [("hang", ALL)]),
])
async def test_runtime_faults(fault: str, expected: list) -> None:
    extra = ["--watchdog-timeout", "300"] if fault == "hang" else []
    alerts = await run_sim(["--sim-fault", fault, *extra], speed=1000 if fault in ("hang", "nccl_timeout") else 200,
                           traffic=True)
    assert kinds(failures_then_death(alerts)) == expected
    assert all(a.severity == "error" for a in alerts)


async def test_crash_is_the_only_signal() -> None:
    alerts = await run_sim(["--sim-fault", "crash@0.2"], traffic=False, stop_after=False, speed=200)
    assert kinds(alerts) == [("crash", [3])]
    assert alerts[0].message.startswith("Subprocess scheduler_3 (pid=")


@pytest.mark.slow
async def test_kv_pressure_is_a_warning_and_nan_is_not_a_log_alert() -> None:
    alerts = await run_sim(["--sim-fault", "nan", "--sim-fault", "kv_pressure", "--decode-log-interval", "4"],
                           requests=2, stop_after=True)
    assert [(a.alert_kind, a.severity) for a in alerts] == [("kv_pressure", "warning")]


@pytest.mark.slow
async def test_healthy_run_with_spec_decoding_raises_nothing() -> None:
    events: list = []
    alerts = await run_sim(["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lightseekorg/kimi-k2.5-eagle3",
                            "--decode-log-interval", "4"], requests=3, stop_after=True, events_out=events)
    assert alerts == []
    decode = [e for e in events if isinstance(e, ServerStats) and e.source == "log_decode"]
    assert decode and all(e.gen_throughput_tok_s and e.accept_length and e.accept_length >= 1 for e in decode)
