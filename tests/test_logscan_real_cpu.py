"""Logs the real SGLang 0.5.23 CPU server printed in tests/test_real_failures.py (kept in
tests/data/logs_real_cpu/, regenerate with TUIAPP_REAL_KEEP_LOGS=DIR) through logscan, and the
simulator's crash lines held to the real ones. No server needed: these run everywhere.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import httpx
import pytest

from tuiapp.cli import main
from tuiapp.sim.process import SimProcess

DATA = Path(__file__).parent / "data" / "logs_real_cpu"


def scan(name: str, capsys) -> dict:
    assert main(["logscan", str(DATA / name), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name,who,ranks", [("kill9_scheduler.log", "scheduler_0", [0]),
                                             ("kill9_detokenizer.log", "detokenizer", [])])
def test_a_killed_child_is_one_crash_incident(name, who, ranks, capsys):
    out = scan(name, capsys)
    assert out["ready"] and out["decode_lines"] > 0
    # SIGQUIT, the diagnostics and tuiapp's SIGINT tracebacks that follow raise nothing more
    assert [(i["kind"], i["ranks"]) for i in out["incidents"]] == [("crash", ranks)]
    assert re.fullmatch(rf"Subprocess {who} \(pid=\d+\) crashed with exit code -9\. Triggering SIGQUIT for cleanup\.\.\.",
                        out["incidents"][0]["message"])


def test_the_failed_start_is_the_warmup_assertion(capsys):
    out = scan("failed_start_max_total_tokens_8.log", capsys)
    assert not out["ready"]
    assert [i["kind"] for i in out["incidents"]] == ["assertion"]
    assert out["incidents"][0]["message"].startswith('AssertionError: {"error":{"message":"Input length (12 tokens) exceeds')


@pytest.mark.parametrize("name", ["sigterm_drain.log", "sigint_stop.log"])
def test_clean_stops_raise_nothing(name, capsys):
    # SIGINT (what tuiapp sends first) makes all three processes print KeyboardInterrupt tracebacks
    out = scan(name, capsys)
    assert out["ready"] and out["incidents"] == []


def _messages(text: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in text.splitlines()
            if re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [A-Z]{2}\d+)*\] ", line)]


def _masked(msgs: list[str]) -> list[str]:
    return [re.sub(r"\d+", "N", m) for m in msgs]


def test_sim_crash_lines_are_the_real_servers(tmp_path):
    real = _messages((DATA / "kill9_scheduler.log").read_text())
    start = next(i for i, m in enumerate(real) if "crashed with exit code" in m)
    real_tail = _masked(real[start:])
    ckpt = tmp_path / "model"  # a local checkpoint the size of the real tier's: --tp 1 serves
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                                  "max_position_embeddings": 4096}))
    (ckpt / "model.safetensors").write_bytes(b"\0" * 4096)
    with SimProcess(["--model-path", str(ckpt), "--tp", "1", "--sim-fault", "crash"], speed=50) as sim:
        sim.wait_ready()
        body = {"text": "x", "sampling_params": {"max_new_tokens": 64, "ignore_eos": True}}
        threading.Thread(target=lambda: _quietly(httpx.post, sim.url + "/generate", json=body, timeout=10),
                         daemon=True).start()
        assert sim.wait_exit(timeout_s=30) == -9
        msgs = _messages(sim.stderr)
    start = next(i for i, m in enumerate(msgs) if "crashed with exit code" in m)
    assert _masked(msgs[start:]) == real_tail


def _quietly(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except httpx.HTTPError:
        pass
