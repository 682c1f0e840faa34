"""`tuiapp attach` end to end, as a user runs it, against a server in another process."""

import json
import re
import subprocess
import sys

import pytest

KEY = "sk-attach-test-7f3a"


def _serve(step_ms: int):
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", str(step_ms),
         "--tokens-per-chunk", "3", "--spec", "--api-key", KEY],
        stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline()
    yield line.split()[-1]
    proc.terminate()
    proc.wait(5)


@pytest.fixture(scope="module")
def server_url():
    yield from _serve(2)


@pytest.fixture(scope="module")
def paced_server_url():
    # 20 ms a step: a 16-token stream lasts ~120 ms, longer than a busy box delays the client's
    # first read; at 2 ms the whole stream could come in one read, which leaves no decode rate
    # to measure (tuiapp then says n/a, rightly)
    yield from _serve(20)


def attach(*args):
    return subprocess.run([sys.executable, "-m", "tuiapp", "attach", *args],
                          capture_output=True, text=True, timeout=60)


def test_headless_runs_summary_and_no_secret(paced_server_url, tmp_path):
    summary, record = tmp_path / "s.json", tmp_path / "rec.jsonl"
    r = attach(paced_server_url, "--api-key", KEY, "--headless", "--runs", "3", "--max-new-tokens", "16",
               "--summary", str(summary), "--record", str(record), "--telemetry", "off")
    assert r.returncode == 0, r.stderr
    run_lines = [ln for ln in r.stdout.splitlines() if re.search(r"\brun\s+#\d", ln)]
    assert len(run_lines) == 3
    data = json.loads(summary.read_text())
    assert set(data) == {"runs", "mean_decode_tok_s", "sd_decode_tok_s", "ci95_decode_tok_s", "points"}
    assert len(data["runs"]) == 3
    for run in data["runs"]:
        assert set(run) == {"decode_tok_s", "output_tok_s", "ttft_s", "tpot_s", "accept_length",
                            "errors", "first_error"}
        assert (run["errors"], run["first_error"]) == (0, None)
        assert run["accept_length"] == 16 / 6  # 1 prefill token + 5 verify steps of 3
        assert 50 < run["decode_tok_s"] < 225  # 3 tokens / 20 ms, loosely (shared box)
    low, high = data["ci95_decode_tok_s"]
    assert low <= data["mean_decode_tok_s"] <= high
    for text in (r.stdout, r.stderr, summary.read_text(), record.read_text()):
        assert KEY not in text


def test_unreachable_url_is_one_line_error():
    r = attach("http://127.0.0.1:1", "--headless", "--runs", "1", "--ready-timeout", "0.6")
    assert r.returncode == 1
    # one progress line while it waits for a server that may be starting, then the reason
    *progress, error = r.stderr.strip().splitlines()
    assert error == "tuiapp attach: error: http://127.0.0.1:1 not ready after 0.6 s (--ready-timeout):" \
        " Connection refused"
    assert progress and all(p.startswith("tuiapp attach: waiting for http://127.0.0.1:1") for p in progress)


@pytest.mark.slow
def test_wrong_key_and_bad_input(server_url, tmp_path):
    r = attach(server_url, "--api-key", "nope-nope", "--headless", "--runs", "1")
    assert r.returncode == 1 and "401" in r.stderr and "nope-nope" not in r.stderr + r.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    r = attach(server_url, "--api-key", KEY, "--headless", "--prompts", str(bad))
    assert r.returncode == 2 and "bad.jsonl:1: not valid JSON" in r.stderr
    assert r.stderr.strip().count("\n") == 0
    r = attach(server_url, "--concurrency", "0", "--headless")
    assert r.returncode == 2 and "concurrency" in r.stderr


def test_headless_attach_never_imports_textual(server_url):
    code = (
        "import sys; from tuiapp.cli import main; "
        f"rc = main(['attach', '{server_url}', '--api-key', '{KEY}', '--headless', '--runs', '1', "
        "'--max-new-tokens', '8', '--telemetry', 'off']); "
        "print('TEXTUAL' if any(m == 'textual' or m.startswith('textual.') for m in sys.modules) else 'CLEAN', rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "CLEAN 0", r.stdout + r.stderr


@pytest.mark.parametrize("args, words", [
    (["http://host:badport"], "bad URL"),
    (["http:///models"], "no host"),
    (["http://127.0.0.1:1", "--metrics-interval", "0"], "--metrics-interval"),
    (["http://127.0.0.1:1", "--summary", "/no/such/dir/s.json"], "--summary"),
    (["http://127.0.0.1:1", "--input-tokens", "0"], "--input-tokens"),
])
def test_bad_input_is_one_line_usage_error(args, words):
    r = attach(*args, "--headless", "--runs", "1")
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert r.stderr.strip().count("\n") == 0


def test_telemetry_kind_shows_only_the_servers_gpus():
    from argparse import Namespace

    from tuiapp.commands.attach import telemetry_kind
    from tuiapp.common.errors import UsageError

    def kind(url, telemetry="auto", dcgm=None):
        return telemetry_kind(Namespace(telemetry=telemetry, dcgm=dcgm), url)

    assert kind("http://127.0.0.1:30000") == "auto"  # local NVML (plus exporters)
    assert kind("http://10.0.0.7:30000") == "off"
    # a remote server with exporters: its nodes' GPUs, not this machine's
    assert kind("http://10.0.0.7:30000", dcgm=["10.0.0.7:9400"]) == "dcgm"
    assert kind("http://10.0.0.7:30000", telemetry="sim") == "sim"
    with pytest.raises(UsageError, match="--dcgm"):
        kind("http://10.0.0.7:30000", telemetry="dcgm")


@pytest.mark.slow
def test_attach_finds_a_simulators_gpus_by_itself(tmp_path, server_url):
    """Default telemetry: the simulator's modelled GPUs; a server that is not one gets none."""
    from tuiapp.commands.attach import is_simulator
    from tuiapp.events import GpuSample, Note
    from tuiapp.record.reading import read_recording
    from tuiapp.sim.process import SimProcess

    assert not is_simulator(server_url, KEY)  # the test server answers 404 there, as SGLang does
    assert not is_simulator("http://127.0.0.1:9")  # nothing listens
    sim = SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"], speed=20)
    try:
        sim.wait_ready(30)
        record = tmp_path / "a.jsonl"
        r = attach(sim.url, "--headless", "--runs", "1", "--max-new-tokens", "8", "--record", str(record))
        assert r.returncode == 0, r.stderr
    finally:
        sim.proc.kill()
        sim.proc.wait(10)
    events = read_recording(record).events
    notes = [e.text for e in events if isinstance(e, Note) and e.source == "telemetry"]
    assert any("simulated GPUs" in n for n in notes), notes
    samples = [e for e in events if isinstance(e, GpuSample)]
    assert {g.index for g in samples} == set(range(8)) and all(g.mem_used_bytes for g in samples)
