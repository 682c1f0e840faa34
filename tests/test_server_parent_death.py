"""A monitor killed with SIGKILL must not leave its server running (it would hold the GPUs)."""

import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tuiapp.server.launcher import term_with_parent_prefix
from tuiapp.server.ports import free_port


def _setpriv_has_pdeathsig() -> bool:
    return bool(term_with_parent_prefix())


@pytest.mark.parametrize("how", ["setpriv", "preexec-hook"])
def test_server_dies_when_tuiapp_is_sigkilled(tmp_path, how):
    """Both ways of asking the kernel: util-linux's setpriv where the monitor finds it on its
    PATH (so Python can vfork), else a pre-exec hook (an empty PATH hides setpriv)."""
    if how == "setpriv" and not _setpriv_has_pdeathsig():
        pytest.skip("no setpriv with --pdeathsig on this machine: the hook is the only way here")
    env = dict(os.environ)
    if how == "preexec-hook":
        env["PATH"] = str(tmp_path / "empty")  # the server is started by absolute path
    port = free_port()
    cmd = [sys.executable, "-m", "tuiapp", "launch", "--headless", "--no-preflight", "--telemetry", "off",
           "--log", str(tmp_path / "server.log"), "--",
           sys.executable, "-m", "tuiapp.sim.server", "--model-path", "m", "--tp", "8",
           "--port", str(port), "--sim-speed", "50"]
    monitor = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    server_pid = None
    deadline = time.monotonic() + 30
    try:
        for line in monitor.stdout:
            if m := re.search(r"server\s+ready .*pid=(\d+)", line):
                server_pid = int(m.group(1))
                break
            assert time.monotonic() < deadline, "server never became ready"
        assert server_pid is not None and psutil.pid_exists(server_pid)
        os.kill(monitor.pid, signal.SIGKILL)
        monitor.wait(10)
        gone = psutil.wait_procs([psutil.Process(server_pid)], timeout=10)[0]
        assert [p.pid for p in gone] == [server_pid]
    finally:
        if monitor.poll() is None:
            monitor.kill()
        if server_pid and psutil.pid_exists(server_pid):
            os.kill(server_pid, signal.SIGKILL)
