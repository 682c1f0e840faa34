"""Discovery that degrades (tuiapp/server/discovery.py): a server whose /v1/models fails, as
transformers serve 5.17's does without its hub cache, is still benchmarked, by attach and by
launch; the model is read from the server command."""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from tuiapp.bench.client import build_payload
from tuiapp.bench.settings import NO_MODEL, BenchSettings
from tuiapp.bench.workload import Prompt
from tuiapp.commands.launch import _single_trial
from tuiapp.commands.launch import add_arguments as launch_arguments
from tuiapp.server.command import served_model, server_family, server_url
from tuiapp.server.discovery import discover
from tuiapp.server.info import ServerUnreachable
from tuiapp.server.ports import free_port


async def test_a_failing_models_list_falls_back_to_a_probe(fake_sglang):
    srv = await fake_sglang()
    srv.openai_only, srv.models_fail, srv.pinned = True, True, True
    found = await discover(srv.url)
    assert (found.info.engine, found.model, found.name_no_model) == ("openai", None, True)
    assert "HTTP 500" in found.notes[0] and "name none" in found.notes[0]
    # --model given: /v1/models is not asked
    srv.paths_seen.clear()
    found = await discover(srv.url, model="fake-model")
    assert (found.model, found.name_no_model, found.notes) == ("fake-model", False, [])
    assert "/v1/models" not in srv.paths_seen


async def test_a_probe_that_fails_too_is_one_line_naming_both(fake_sglang):
    srv = await fake_sglang()
    srv.openai_only, srv.models_fail = True, True
    srv.faults.append("http400")
    with pytest.raises(ServerUnreachable) as caught:
        await discover(srv.url)
    text = str(caught.value)
    assert "HTTP 500" in text and "a probe request naming no model: HTTP 400" in text and "--model NAME" in text
    assert "\n" not in text


async def test_api_and_model_given_need_no_discovery(fake_sglang):
    srv = await fake_sglang()
    srv.openai_only, srv.models_fail = True, True
    srv.faults.append("http400")  # the probe would fail: it is not sent
    found = await discover(srv.url, api="chat", model="fake-model")
    assert (found.info.engine, found.model) == ("openai", "fake-model")


def test_requests_name_no_model_when_told():
    s = BenchSettings(api="chat", model=NO_MODEL, sglang_extensions=False)
    body = json.loads(build_payload("chat", Prompt("hi"), s, s.model))
    assert "model" not in body and body["messages"]
    assert json.loads(build_payload("chat", Prompt("hi"), s, "m"))["model"] == "m"


@pytest.mark.parametrize(("argv", "family", "model", "port"), [
    (["transformers", "serve", "/m/tiny", "--device", "cpu"], "transformers", "/m/tiny", 8000),
    (["/venv/bin/vllm", "serve", "Qwen/Qwen3-8B", "--served-model-name", "qwen"], "vllm", "qwen", 8000),
    (["vllm", "serve", "Qwen/Qwen3-8B", "--port", "9000"], "vllm", "Qwen/Qwen3-8B", 9000),
    (["sglang", "serve", "--model-path", "org/M", "--tp", "8"], "sglang", "org/M", 30000),
    (["sglang", "serve", "org/M"], "sglang", "org/M", 30000),
    (["python", "-m", "sglang.launch_server", "--model-path", "M", "--served-model-name", "m1"], "sglang", "m1", 30000),
    (["uv", "run", "transformers", "serve", "--port", "8001"], "transformers", None, 8001),
    (["./my_server.sh"], None, None, 30000),
])
def test_the_served_model_is_read_from_the_command(argv, family, model, port):
    assert (server_family(argv), served_model(argv), server_url(argv)) == (
        family, model, f"http://127.0.0.1:{port}")


def launch_args(*argv: str) -> Namespace:
    import argparse

    parser = argparse.ArgumentParser()
    launch_arguments(parser)
    return parser.parse_args(list(argv))


def test_launch_sends_the_standard_api_to_a_server_known_not_to_be_sglang():
    args = launch_args("--", "transformers", "serve", "/m/tiny", "--port", "8001")
    bench = _single_trial(list(args.server[1:]), args).bench
    assert (bench.api, bench.model, bench.sglang_extensions, bench.flush_cache) == ("chat", "/m/tiny", False, False)
    args = launch_args("--model", "other", "--", "sglang", "serve", "--model-path", "M")
    bench = _single_trial(list(args.server[1:]), args).bench
    assert (bench.api, bench.model, bench.sglang_extensions) == ("generate", "other", True)


@pytest.fixture
def failing_models_server():
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", "5",
                             "--openai-only", "--models-fail", "--pinned"], stdout=subprocess.PIPE, text=True)
    yield proc.stdout.readline().split()[-1]
    proc.terminate()
    proc.wait(5)


@pytest.mark.parametrize("flags", [("--api", "chat", "--model", "fake-model"), ()])
def test_attach_benchmarks_a_server_whose_models_list_fails(failing_models_server, tmp_path, flags):
    summary = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "tuiapp", "attach", failing_models_server, *flags, "--headless",
                        "--runs", "2", "--max-new-tokens", "24", "--telemetry", "off", "--summary", str(summary)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    runs = json.loads(summary.read_text())["runs"]
    assert len(runs) == 2 and all(run["errors"] == 0 and run["decode_tok_s"] for run in runs)
    if not flags:
        assert "requests name none" in r.stdout


@pytest.mark.slow
def test_launch_benchmarks_a_server_whose_models_list_fails(tmp_path: Path):
    port = free_port()
    r = subprocess.run([sys.executable, "-m", "tuiapp", "launch", "--headless", "--runs", "2", "--max-new-tokens", "24",
                        "--telemetry", "off", "--log", str(tmp_path / "server.log"), "--",
                        sys.executable, "-m", "tuiapp.sim.testserver", "--port", str(port), "--step-ms", "5",
                        "--openai-only", "--models-fail", "--pinned"],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "requests name none" in r.stdout
    assert len([ln for ln in r.stdout.splitlines() if " run " in ln]) >= 2
