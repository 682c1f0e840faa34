"""The shipped recording of the reference campaign (recordings/campaign.jsonl.gz, made with
`tuiapp demo --headless --record recordings/campaign.jsonl.gz`) replays and reports."""

import subprocess
import sys
from pathlib import Path

import pytest

from tuiapp.events import Alert, TrialResult
from tuiapp.record.reading import read_recording

SAMPLE = Path(__file__).resolve().parent.parent / "recordings" / "campaign.jsonl.gz"
EXPECTED_STATUS = {
    "old-baseline": "ok", "new-baseline": "ok", "eagle3": "ok", "custom-allreduce-pcie": "ok",
    "flashinfer-allreduce-fusion": "jit_arch", "torch-symm-mem": "keyerror", "nccl-tree": "nccl",
    "ep-flashinfer-a2a": "assertion",
}


@pytest.fixture(scope="module")
def recording():
    return read_recording(SAMPLE)


def test_sample_holds_the_whole_campaign(recording):
    assert recording.header["format"] == "tuiapp-recording" and recording.skipped_lines == 0
    results = {e.name: e for e in recording.events if isinstance(e, TrialResult)}
    assert {n: r.status for n, r in results.items()} == EXPECTED_STATUS
    assert results["new-baseline"].row["verdict"] == "faster"
    assert 89.0 < results["new-baseline"].row["mean_decode_tok_s"] < 90.0
    kinds = {e.alert_kind for e in recording.events if isinstance(e, Alert)}
    assert {"jit_arch", "keyerror", "nccl", "assertion"} <= kinds


def test_headless_replay_prints_the_recorded_summary():
    out = subprocess.run([sys.executable, "-m", "tuiapp", "replay", str(SAMPLE), "--headless", "--summary"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "result torch-symm-mem: keyerror" in out.stdout
    assert "trial new-baseline: mean 89.5" in out.stdout
    assert "textual" not in out.stderr


def test_report_from_the_sample(tmp_path):
    md = tmp_path / "campaign.md"
    out = subprocess.run([sys.executable, "-m", "tuiapp", "report", str(SAMPLE), "-o", str(md)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = md.read_text()
    assert "KeyError: 12" in text and "new-baseline" in text
    assert list(tmp_path.glob("*.svg"))
