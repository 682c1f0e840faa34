"""Headless record -> replay: the same lines and summary, and never a Textual import."""

import subprocess
import sys
from pathlib import Path

from tuiapp.cli import main

SCRIPT = r"""
import sys
from pathlib import Path

from tuiapp import session
from tuiapp.commands import frontend
from tuiapp.sim.synthetic import campaign_events

async def synthetic(bus):
    for event in campaign_events(600):
        bus.publish(event)

s = session.Session("synthetic", sources=[synthetic], record_path=Path(sys.argv[1]),
                    header={"title": "synthetic", "argv": ["tuiapp", "demo", "--api-key", "k-12345"]})
code = frontend.run(s, headless=True)
print("=== exit", code)
from tuiapp.cli import main
main(["replay", sys.argv[1], "--headless", "--summary"])
main(["report", sys.argv[1], "-o", sys.argv[1] + ".md"])
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print("=== textual modules:", loaded)
"""


def test_headless_record_replays_to_the_same_output_without_textual(tmp_path: Path, capsys) -> None:
    rec = tmp_path / "run.jsonl"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(rec)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    live, _, after = proc.stdout.partition("=== exit 0\n")
    replay_summary, _, tail = after.partition("wrote ")
    assert "=== textual modules: []" in tail
    assert b"k-12345" not in rec.read_bytes()

    # the live summary is the printer's last block; --headless --summary prints exactly it
    live_summary = live[live.index("summary: "):]
    assert live_summary.count("trial ") >= 4 and "oom x1" in live_summary
    assert replay_summary == live_summary

    # --headless without --summary prints every progress line again, then the summary
    assert main(["replay", str(rec), "--headless"]) == 0
    assert capsys.readouterr().out == live
    run_lines = [line for line in live.splitlines() if " run " in line]
    assert run_lines and all("decode=" in line and "tok/s/stream" in line and "ttft_mean=" in line for line in run_lines)
    assert any(" ALERT " in line and "oom" in line and "ranks=0,1,2,3,4,5,6,7" in line for line in live.splitlines())
    gpu_lines = [line for line in live.splitlines() if " gpus " in line]
    assert 40 <= len(gpu_lines) <= 61  # one compact line per ~10 s of a 600 s recording, not 4800 samples
