"""The real SGLang server for the `real_sglang` tier (not a test module; tests import it).

The tier is on when TUIAPP_REAL_SGLANG names the venv that tools/sglang_cpu/setup.sh made
(its model is the `model` folder beside it). On, a server that cannot start is a failure;
off, the tier's tests skip with one line. One real server takes ~2.7 GB and ~45 s to start
on 2 cores, so a module starts one (module-scoped fixture) and always kills its process
group afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

ENV = "TUIAPP_REAL_SGLANG"
READY_LINE = "The server is fired up and ready to roll!"
START_TIMEOUT_S = 240.0  # ~45 s idle; a loaded 2-core box has taken 2-3x that
SERVER_ENV = {
    "SGLANG_USE_CPU_ENGINE": "1",  # sglang's is_cpu() is False without it, whatever --device says
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONUNBUFFERED": "1",
}


def venv() -> Path:
    """The tier's venv, or skip (tier off) / fail (tier on but broken)."""
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(f"real SGLang tier off: set {ENV}=VENV (made by tools/sglang_cpu/setup.sh)")
    path = Path(value)
    if not (path / "bin" / "python").exists() or not (path.parent / "model" / "config.json").exists():
        pytest.fail(f"{ENV}={value}: no venv with a model beside it; run tools/sglang_cpu/setup.sh")
    return path


def model_dir(venv_path: Path) -> Path:
    return venv_path.parent / "model"


def server_argv(venv_path: Path, port: int, *extra: str) -> list[str]:
    """The real server on CPU: why each flag is there is in docs/real-server.md."""
    return [str(venv_path / "bin" / "python"), "-m", "sglang.launch_server",
            "--model-path", str(model_dir(venv_path)), "--device", "cpu",
            "--host", "127.0.0.1", "--port", str(port),
            "--attention-backend", "torch_native",  # the CPU default, intel_amx, needs the real sgl-kernel
            "--sleep-on-idle",  # else the idle scheduler busy-polls a whole core
            "--max-total-tokens", "65536",  # else the KV pool is sized from free RAM (6 GB)
            "--enable-metrics", "--log-level", "info", *extra]


def server_env() -> dict[str, str]:
    return {**os.environ, **SERVER_ENV}


def tree_pids(pid: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        return [root.pid, *(c.pid for c in root.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def kill_tree(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class RealServer:
    """One real server in its own process group, its merged output in ``log_path``."""

    def __init__(self, venv_path: Path, log_path: Path, port: int, *extra: str,
                 cpus: list[int] | None = None) -> None:
        """``cpus``: run the whole server (its children inherit it) on these CPUs alone."""
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.argv = server_argv(venv_path, port, *extra)
        self._log = open(log_path, "wb")
        env = server_env()
        if cpus:
            cpu_list = ",".join(map(str, cpus))
            # the CPU engine binds its OpenMP threads to the cores it lists (else 0..N-1)
            env.update(SGLANG_CPU_OMP_THREADS_BIND=cpu_list, OMP_NUM_THREADS=str(len(cpus)))
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        self.pids: list[int] = [self.proc.pid]

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"real SGLang exited with {self.proc.returncode} while starting:\n{self.log[-3000:]}")
            if READY_LINE in self.log:
                try:
                    if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                        self.pids = tree_pids(self.proc.pid)
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.25)
        raise TimeoutError(f"real SGLang not ready after {timeout_s:.0f} s:\n{self.log[-3000:]}")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM to the group (SGLang's clean shutdown), SIGKILL to whatever is left."""
        pids = list(dict.fromkeys(self.pids + tree_pids(self.proc.pid)))
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        kill_tree(alive(pids))
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> RealServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
