"""Processes a test starts end with the run (tests/conftest.py), also when the run is interrupted
or the test's own child died first and left its child behind."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ORPHAN_TEST = '''
import subprocess, sys, time
from pathlib import Path

def test_leaves_an_orphan():
    # a child that starts a sleeper and exits at once: the sleeper is orphaned (a simulator
    # whose tuiapp died)
    subprocess.run([sys.executable, "-c", "import subprocess, sys; "
                    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
                    "print(p.pid)"], stdout=open(Path(__file__).parent / "pid", "w"), check=True)
    {rest}
'''


def run_session(tmp_path: Path, rest: str, interrupt: bool) -> tuple[int, str]:
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_orphan.py").write_text(ORPHAN_TEST.format(rest=rest))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
           "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pid_file = tmp_path / "pid"
        if interrupt:
            for _ in range(600):  # the orphan is running: interrupt the run as CI's timeout would
                if pid_file.exists() and pid_file.read_text().strip():
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return int(pid_file.read_text()), out


def assert_ended(pid: int) -> None:
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    try:
        proc.wait(timeout=10)
    except psutil.TimeoutExpired:
        proc.kill()
        pytest.fail(f"process {pid} outlived the run")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
@pytest.mark.slow
def test_an_orphan_of_a_test_ends_with_the_session(tmp_path):
    pid, out = run_session(tmp_path, "", interrupt=False)
    assert_ended(pid)
    assert "ended 1 process(es) a test left running" in out, out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
@pytest.mark.slow
def test_an_orphan_of_a_test_ends_when_the_run_is_interrupted(tmp_path):
    pid, out = run_session(tmp_path, "time.sleep(120)", interrupt=True)
    assert_ended(pid)
