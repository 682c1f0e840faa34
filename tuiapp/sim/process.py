"""Start the simulator as a child process (tests and benchmarks; the product's launcher
starts it like a real SGLang server instead). Output is collected by reader threads.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import httpx


def free_port() -> int:
    # The simulator stands apart from the product, so it binds port 0 itself.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SimProcess:
    def __init__(self, args: list[str], env: dict | None = None, speed: float = 100.0, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "tuiapp.sim.server", "--port", str(self.port), "--sim-speed", str(speed), *args]
        full_env = {**os.environ, **(env or {})}
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
        self._err: list[bytes] = []
        self._out: list[bytes] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stdout, self._out), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, sink: list[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            sink.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._err).decode("utf-8", "replace")

    @property
    def stdout(self) -> str:
        return b"".join(self._out).decode("utf-8", "replace")

    def wait_for(self, needle: str, timeout_s: float = 5.0, stream: str = "stderr") -> bool:
        """True once ``needle`` shows up in the collected output (reader threads lag a little)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in (self.stderr if stream == "stderr" else self.stdout):
                return True
            time.sleep(0.02)
        return False

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"simulator exited with {self.proc.returncode}:\n{self.stderr[-3000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"simulator not ready after {timeout_s} s:\n{self.stderr[-3000:]}")

    def wait_exit(self, timeout_s: float = 30.0) -> int:
        rc = self.proc.wait(timeout=timeout_s)
        for t in self._threads:
            t.join(timeout=2.0)
        return rc

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in self._threads:
            t.join(timeout=2.0)
        return self.proc.returncode

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
