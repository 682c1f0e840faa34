"""Real OpenAI-compatible servers that are not SGLang, on CPU, from PyPI, with the tiny local
model (the `real_peers` tier; docs/attach.md "Other OpenAI-compatible servers").

On when TUIAPP_REAL_PEERS names the folder tools/peers/setup.sh made (its `hf` venv runs
`transformers serve` 5.17, its `fastchat` venv FastChat 0.2.36's OpenAI API server, its `llama`
venv llama-cpp-python 0.3.36's server, its `model` the checkpoint); then a server that cannot start fails, it never skips. Off, each test skips
with one line. Every server a test starts is stopped with its process group.

transformers serve 5.17 answers `GET /v1/models` with HTTP 500 when its hub cache folder is
missing (as on the H200 where issue 40 was found) while its chat completions stream: the
fallback of discovery is tested against it, by attach and by launch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tuiapp.server.ports import free_port

ENV = "TUIAPP_REAL_PEERS"
START_TIMEOUT_S = 180.0  # transformers serve: ~15 s idle (torch import, model load); a loaded box 3-5x

pytestmark = [pytest.mark.real_peers, pytest.mark.timeout(600)]


def home() -> Path:
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(f"real peers tier off: set {ENV}=DIR (made by tools/peers/setup.sh)")
    path = Path(value)
    if not all((path / p).exists() for p in ("hf/bin/transformers", "fastchat/bin/python", "llama/bin/python",
                                              "model/config.json", "model-v4/config.json", "model.gguf")):
        pytest.fail(f"{ENV}={value}: not what tools/peers/setup.sh makes; run it")
    return path


def wait_for(url: str, proc_logs: list[tuple[subprocess.Popen, Path]], ready) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        for proc, log in proc_logs:
            assert proc.poll() is None, f"{proc.args[:3]} exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not ready in {START_TIMEOUT_S:.0f} s:\n{proc_logs[-1][1].read_text()[-3000:]}"
        try:
            if ready(httpx.get(url, timeout=2)):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


def peer_env(root: Path) -> dict[str, str]:
    # no hub, and a hub cache folder that does not exist: /v1/models answers 500
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
            "HF_HUB_CACHE": str(root / "no-hub-cache"), "PYTHONUNBUFFERED": "1"}


def transformers_argv(root: Path, port: int) -> list[str]:
    return [str(root / "hf" / "bin" / "transformers"), "serve", str(root / "model"), "--device", "cpu",
            "--host", "127.0.0.1", "--port", str(port), "--log-level", "info"]


@pytest.fixture(scope="module")
def transformers_server(tmp_path_factory):
    root = home()
    port = free_port()
    log = tmp_path_factory.mktemp("peers") / "transformers.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(transformers_argv(root, port), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=peer_env(root), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(url + "/health", [(proc, log)], lambda r: r.status_code == 200)
        # the condition under test: the real server's model list fails
        assert httpx.get(url + "/v1/models", timeout=10).status_code == 500
        yield url, str(root / "model")
    finally:
        stop([proc])


@pytest.fixture(scope="module")
def fastchat_server(tmp_path_factory):
    """FastChat's three processes: controller, a model worker on CPU, the OpenAI API server."""
    root = home()
    py = str(root / "fastchat" / "bin" / "python")
    logs = tmp_path_factory.mktemp("fastchat")
    ctl, worker, api = free_port(), free_port(), free_port()
    controller = f"http://127.0.0.1:{ctl}"
    argvs = {
        "controller": [py, "-m", "fastchat.serve.controller", "--host", "127.0.0.1", "--port", str(ctl)],
        "worker": [py, "-m", "fastchat.serve.model_worker", "--model-path", str(root / "model-v4"), "--device", "cpu",
                   "--controller-address", controller, "--worker-address", f"http://127.0.0.1:{worker}",
                   "--host", "127.0.0.1", "--port", str(worker)],
        "api": [py, "-m", "fastchat.serve.openai_api_server", "--host", "127.0.0.1", "--port", str(api),
                "--controller-address", controller],
    }
    procs: list[tuple[subprocess.Popen, Path]] = []
    try:
        for name, argv in argvs.items():
            log = logs / f"{name}.log"
            with open(log, "wb") as out:
                # FastChat writes its own log files into LOGDIR (default: the working directory)
                procs.append((subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                               env={**peer_env(root), "LOGDIR": str(logs)}, cwd=logs,
                                               start_new_session=True), log))
        url = f"http://127.0.0.1:{api}"
        wait_for(url + "/v1/models", procs, lambda r: r.status_code == 200 and r.json().get("data"))
        yield url
    finally:
        stop([p for p, _ in procs])


def attach(url: str, tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    summary = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "tuiapp", "attach", url, *flags, "--headless", "--runs", "2",
                        "--max-new-tokens", "16", "--telemetry", "off", "--summary", str(summary)],
                       capture_output=True, text=True, timeout=300)
    return r, (json.loads(summary.read_text()) if summary.exists() else {})


def test_attach_with_api_and_model_needs_no_discovery(transformers_server, tmp_path):
    url, model = transformers_server
    r, summary = attach(url, tmp_path, "--api", "chat", "--model", model)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert [run["errors"] for run in summary["runs"]] == [0, 0]
    assert all(run["decode_tok_s"] for run in summary["runs"])


def test_attach_falls_back_to_a_probe_when_models_fails(transformers_server, tmp_path):
    url, _model = transformers_server
    r, summary = attach(url, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "HTTP 500" in r.stdout and "requests name none" in r.stdout
    assert [run["errors"] for run in summary["runs"]] == [0, 0]


def test_launch_transformers_serve_reads_the_model_from_the_command(tmp_path):
    root = home()
    port = free_port()
    r = subprocess.run([sys.executable, "-m", "tuiapp", "launch", "--headless", "--runs", "2", "--max-new-tokens", "16",
                        "--telemetry", "off", "--ready-timeout", str(START_TIMEOUT_S),
                        "--log", str(tmp_path / "server.log"), "--", *transformers_argv(root, port)],
                       capture_output=True, text=True, timeout=400, env=peer_env(root))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    runs = [ln for ln in r.stdout.splitlines() if " run " in ln]
    assert len(runs) >= 2 and all(ln.endswith("errors=0") for ln in runs), r.stdout[-3000:]
    assert "pinned" not in r.stdout  # the model read from the command is the one it serves


def test_attach_fastchat_which_sends_no_usage(fastchat_server, tmp_path):
    """FastChat's API server: no /health, no usage in the stream (a token per chunk, with a
    note), a role-only first chunk; attach with no flags benchmarks it."""
    r, summary = attach(fastchat_server, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "no token usage" in r.stdout
    assert [run["errors"] for run in summary["runs"]] == [0, 0]
    assert all(run["decode_tok_s"] for run in summary["runs"])


def llama_argv(root: Path, port: int) -> list[str]:
    return [str(root / "llama" / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(root / "model.gguf"),
            "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1"]


def test_attach_llama_cpp_which_cuts_a_stream_when_another_comes(tmp_path):
    """llama-cpp-python: no /health, no usage, and a second request ends the running stream:
    at concurrency 2 tuiapp sees it, says so and sends one at a time."""
    root = home()
    port = free_port()
    log = tmp_path / "llama.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(llama_argv(root, port), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=peer_env(root), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(url + "/v1/models", [(proc, log)], lambda r: r.status_code == 200)
        assert httpx.get(url + "/health", timeout=5).status_code == 404
        r, summary = attach(url, tmp_path, "--concurrency", "2")
    finally:
        stop([proc])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "no token usage" in r.stdout and "one request at a time" in r.stdout
    assert all(run["decode_tok_s"] for run in summary["runs"])


def test_launch_llama_cpp_is_ready_by_its_model_list(tmp_path):
    """launch of a server without /health nor SGLang's ready line: ready when /v1/models
    answers (server/states.py), the model named by the command's --model."""
    root = home()
    r = subprocess.run([sys.executable, "-m", "tuiapp", "launch", "--headless", "--runs", "2", "--max-new-tokens", "16",
                        "--telemetry", "off", "--ready-timeout", str(START_TIMEOUT_S),
                        "--log", str(tmp_path / "server.log"), "--", *llama_argv(root, free_port())],
                       capture_output=True, text=True, timeout=400, env=peer_env(root))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    runs = [ln for ln in r.stdout.splitlines() if " run " in ln]
    assert len(runs) >= 2 and all(ln.endswith("errors=0") for ln in runs), r.stdout[-3000:]
