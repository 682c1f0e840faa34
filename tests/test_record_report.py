import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tuiapp.cli import main
from tuiapp.record.recorder import Recorder
from tuiapp.sim.synthetic import campaign_events

SVG = "{http://www.w3.org/2000/svg}"


def test_report_writes_markdown_and_valid_svg_charts(tmp_path: Path, capsys) -> None:
    rec = tmp_path / "campaign.jsonl.gz"
    with Recorder(rec, {"title": "reference campaign", "sglang_version": "0.5.6"}) as r:
        for event in campaign_events(400):
            r.write(event)
    out = tmp_path / "out" / "plan-notes.md"
    out.parent.mkdir()  # report -o creates no directories (a typo must not grow a tree)
    assert main(["report", str(rec), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    md = out.read_text()
    for heading in ("# tuiapp report: reference campaign", "## Ledger", "## Findings", "## Per trial", "## Summary",
                    "## Runs", "## Alerts",
                    "## GPUs (peaks)", "## Charts"):
        assert heading in md
    findings = md.split("## Findings")[1].split("##")[0]
    assert "Fastest: **baseline**, 89." in findings
    assert "eagle3 vs baseline: -3" in findings and "slower (Welch" in findings
    assert "PCIe: custom-ar-pcie moves" in findings
    assert "ep-flashinfer-a2a failed: oom on ranks 0,1,2,3,4,5,6,7" in findings
    per_trial = md.split("## Per trial")[1].split("##")[0]
    assert per_trial.count("\n| ") == 5  # header + 4 trials
    ledger = md.split("## Ledger")[1].split("##")[0]
    assert "| baseline | ok | 89." in ledger and "| ep-flashinfer-a2a | oom |" in ledger and "slower" in ledger
    alerts = md.split("## Alerts")[1].split("## GPUs")[0]
    assert "| oom | error | 0,1,2,3,4,5,6,7 |" in alerts and "CUDA out of memory" in alerts
    assert "<details>" in alerts  # the traceback, folded
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", md)
    assert sorted(links) == sorted(f"plan-notes.{c}.svg" for c in ("tok_s", "acceptance", "pcie_rx", "pcie_tx", "memory"))
    for link in links:
        root = ET.parse(out.parent / link).getroot()
        assert root.tag == f"{SVG}svg"
        lines = root.findall(f"{SVG}polyline")
        assert lines, link
        for line in lines:
            assert len(line.get("points", "").split()) >= 2
    pcie = ET.parse(out.parent / "plan-notes.pcie_rx.svg").getroot()
    assert len(pcie.findall(f"{SVG}polyline")) == 8  # one per GPU
    legend = [t.text for t in pcie.iter(f"{SVG}text")]
    assert "GPU 7" in legend and "oom" in legend  # the alert is marked on the time axis


def test_report_default_path_is_beside_the_recording(tmp_path: Path) -> None:
    rec = tmp_path / "short.jsonl"
    with Recorder(rec) as r:
        for event in campaign_events(60):
            r.write(event)
    assert main(["report", str(rec)]) == 0
    assert (tmp_path / "short.md").is_file() and (tmp_path / "short.memory.svg").is_file()


def test_report_into_a_directory_is_a_usage_error_that_writes_nothing(tmp_path: Path, capsys) -> None:
    rec = tmp_path / "short.jsonl"
    with Recorder(rec) as r:
        for event in campaign_events(10):
            r.write(event)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["report", str(rec), "-o", str(out)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "short.jsonl"]
