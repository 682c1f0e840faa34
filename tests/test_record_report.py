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
    assert "PCIe while serving: custom-ar-pcie moves" in findings
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


def test_report_on_the_shipped_recording_compares_like_the_ledger(tmp_path: Path) -> None:
    """Every comparison names two trials that produced figures, the second being the base the
    ledger compared the first with, with the ledger's own difference; GPU figures come from
    the serving phase (start-up apart) and none exceeds what a Gen5 x16 link carries."""
    from tuiapp.events import TrialResult
    from tuiapp.record.reading import read_recording
    from tuiapp.record.report import build_report

    rec = read_recording(Path(__file__).resolve().parent.parent / "recordings" / "campaign.jsonl.gz")
    rows = {e.name: e.row for e in rec.events if isinstance(e, TrialResult)}
    with_figures = {name for name, row in rows.items() if row.get("mean_decode_tok_s") is not None}
    assert with_figures == {"old-baseline", "new-baseline", "eagle3", "custom-allreduce-pcie"}
    md, _svgs = build_report(rec, lambda suffix: f"r.{suffix}.svg")
    findings = md.split("## Findings")[1].split("\n## ")[0]

    compared = re.findall(r"^- (\S+) vs (\S+): ([+-][\d.]+) tok/s \(([+-][\d.]+)%\)", findings, re.M)
    assert {a for a, *_ in compared} == with_figures - {"old-baseline"}  # every trial with figures but the base
    for trial, base, _delta, pct in compared:
        assert trial in with_figures and base in with_figures
        assert base == rows[trial]["baseline"]
        assert float(pct) == round(rows[trial]["delta_pct"], 1)
    pcie = re.findall(r"^- PCIe while serving: (\S+) moves ([\d.]+) GB/s per GPU on average, (\d+)x (\S+)'s ([\d.]+) GB/s",
                      findings, re.M)
    assert len(pcie) == 1  # only the custom all-reduce moves PCIe differently from its base
    trial, mine, ratio, base, theirs = pcie[0]
    assert (trial, base) == ("custom-allreduce-pcie", rows[trial]["baseline"])
    assert float(theirs) > 0.1 and 20 <= int(ratio) <= 35  # the campaign's 27x, not a division by ~0
    assert base.rstrip("'s") in with_figures

    per_trial = md.split("## Per trial")[1].split("\n## ")[0]
    table_lines = [x for x in per_trial.splitlines() if x.startswith("|")]
    assert len(table_lines) == 2 + len(rows)
    for line in table_lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        name, serving_mean, serving_busiest = cells[0], cells[7], cells[8]
        if name in with_figures:
            assert 0 < float(serving_busiest) < 63.0, line  # serving traffic, not the weight load
            assert float(serving_mean) <= float(serving_busiest)
        else:
            assert serving_mean == serving_busiest == "n/a", line  # a failed trial never served
    gpus = md.split("## GPUs (peaks)")[1].split("\n## ")[0]
    for line in [x for x in gpus.splitlines() if x.startswith("| ") and x[2].isdigit()]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert float(cells[3]) < 63.0 and float(cells[4]) < 63.0, line
