"""Acceptance per draft position where a headless job and a CI gate read it: the printer's run and
point lines and summary, the --summary JSON, and `tuiapp compare` (per position, Welch with Holm,
never part of the gate); a server without speculative decoding says so instead of a 0."""

from __future__ import annotations

import io
import json

import pytest

from tuiapp.bench.client import RequestResult
from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.points import PointTally, point_event, point_summary
from tuiapp.bench.settings import BenchSettings
from tuiapp.common import acceptance
from tuiapp.events import RunDone, RunFigures, ServerInfo
from tuiapp.record.printer import Printer
from tuiapp.trials.compare import EXIT_PASS, compare, gate, load

# 100 verify steps: 10 accepted no draft, 20 one, 30 two, 40 three
HIST = [10, 20, 30, 40]


def _run(i: int, hist: list[int] | None, caps: list[int] | None = None, trial: str | None = None,
         decode: float = 50.0) -> RunDone:
    return RunDone(t_s=i, run_index=i, requests=4, duration_s=1.0, decode_tok_s=decode + i % 2, output_tok_s=90.0,
                   accept_length=acceptance.mean_length(hist), spec_accept_histogram=hist, spec_cap_histogram=caps,
                   trial=trial)


def test_run_and_point_lines_and_the_summary_carry_acceptance_per_position():
    out = io.StringIO()
    p = Printer(out)
    p.handle(ServerInfo(t_s=0, url="http://s", speculative_algorithm="EAGLE3", server_args={"speculative_algorithm": "EAGLE3"}))
    p.handle(_run(1, HIST))
    # an adaptive budget: position 3 reached by half the steps only, all 40 of its acceptances among them
    p.handle(_run(2, HIST, [0, 0, 50, 50], trial="adaptive"))
    tally = PointTally(settings=BenchSettings())
    for hist in ([1, 0, 2, 1], [0, 1, 1, 3]):
        tally.add(RequestResult(ok=True, completion_tokens=10, ttft_s=0.1, e2e_s=0.5, spec_accept_histogram=hist))
    tally.add(RequestResult(ok=False, error="HTTP 500: x", spec_accept_histogram=[100, 0, 0, 0]))  # a failed request
    point = point_event(0, BenchSettings(), tally, None)
    assert point.spec_accept_histogram == [1, 1, 3, 4]
    p.handle(point)
    lines = out.getvalue().splitlines()
    run1, run2 = (line for line in lines if " run " in line)
    assert "accept=3.00 accept_pos=90.0/70.0/40.0% accept_cond=90.0/77.8/57.1% reqs=4" in run1
    assert "accept_pos=90.0/70.0/80.0%" in run2  # unobserved, not rejected
    assert "accept_pos=88.9/77.8/44.4%" in next(line for line in lines if " point " in line)
    summary = p.summary()
    assert "speculative acceptance per position (100 verify steps): accept_pos=90.0/70.0/40.0%" in summary
    assert "speculative acceptance per position trial adaptive (100 verify steps): accept_pos=90.0/70.0/80.0%" in summary
    # the summary file's point has the same figures
    assert point_summary(point)["accept_by_position"] == pytest.approx([8 / 9, 7 / 9, 4 / 9])


def test_a_server_without_speculation_says_so_instead_of_a_zero():
    out = io.StringIO()
    p = Printer(out)
    # the real CPU server's /server_info: speculative_algorithm null
    p.handle(ServerInfo(t_s=0, url="http://s", version="0.5.23", server_args={"speculative_algorithm": None}))
    p.handle(_run(1, None))
    assert out.getvalue().splitlines()[0].endswith(" spec=off")
    run = next(line for line in out.getvalue().splitlines() if " run " in line)
    assert "accept=n/a reqs=" in run and "accept_pos" not in run
    assert "speculative decoding: off (the server runs none: no acceptance figures)" in p.summary()
    q = Printer(io.StringIO())
    q.handle(ServerInfo(t_s=0, url="http://s", speculative_algorithm="EAGLE3"))
    q.handle(_run(1, None))
    assert "EAGLE3, but the server sent no per-request histogram" in q.summary()
    assert "speculative" not in Printer(io.StringIO()).summary()  # nothing known, nothing said


def _summary_file(tmp_path, name: str, hists: list[list[int] | None]) -> str:
    loop = BenchLoop(lambda _e: None, "http://s", BenchSettings())
    loop.results = [RunFigures(_run(i, h)) for i, h in enumerate(hists)]
    data = loop.summary()
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_summary_json_and_compare_judge_each_position(tmp_path):
    base_hists = [[10, 20, 30, 40], [12, 18, 30, 40], [11, 19, 31, 39], [9, 21, 29, 41]]
    new_hists = [[10, 20, 50, 20], [11, 19, 52, 18], [9, 21, 48, 22], [10, 20, 51, 19]]  # the third draft worse
    base = _summary_file(tmp_path, "base.json", base_hists)
    new = _summary_file(tmp_path, "new.json", new_hists)
    data = json.loads(base.read_text())
    assert data["spec_accept_histogram"] == [42, 78, 120, 160]
    assert data["accept_by_position"] == pytest.approx([358 / 400, 280 / 400, 160 / 400])
    assert data["runs"][0]["accept_conditional_by_position"] == pytest.approx([0.9, 0.7 / 0.9, 0.4 / 0.7])
    b, n = load(base), load(new)
    rows = compare(b, n)
    accept = {r.metric: r for r in rows if r.metric.startswith("accept_p")}
    assert list(accept) == ["accept_p1", "accept_p2", "accept_p3"]
    assert accept["accept_p3"].verdict == "lower" and accept["accept_p3"].n_new == 4
    assert accept["accept_p1"].verdict == "within noise"
    assert accept["accept_p3"].p_adjusted is not None  # Holm over the positions
    # acceptance informs; the gate judges the primary metric only
    assert gate(b, n, rows, "decode_tok_s").code == EXIT_PASS
    # without histograms (a server without speculation) there is no acceptance row at all
    plain = _summary_file(tmp_path, "plain.json", [None, None])
    assert not [r for r in compare(load(plain), load(plain)) if r.metric.startswith("accept_p")]
    assert "accept_by_position" not in json.loads(plain.read_text())


def test_compare_reads_a_ledgers_per_run_positions(tmp_path):
    rows = [{"name": "eagle", "status": "ok", "runs_decode_tok_s": [50.0, 51.0], "runs_output_tok_s": [90.0, 91.0],
             "runs_accept_by_position": [[0.9, 0.91, 0.89], [0.7, 0.71, 0.69]]}]
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(rows))
    other = [{**rows[0], "runs_accept_by_position": [[0.8, 0.81, 0.79], [0.7, 0.72, 0.69]]}]
    path2 = tmp_path / "ledger2.json"
    path2.write_text(json.dumps(other))
    got = {r.metric: r.verdict for r in compare(load(path), load(path2)) if r.metric.startswith("accept_p")}
    assert got == {"accept_p1": "lower", "accept_p2": "within noise"}


def test_compare_reads_recordings_runs_histograms_per_trial(tmp_path):
    from tuiapp.events import dump_event
    from tuiapp.record.header import build_header

    def recording(name: str, third: int) -> str:
        path = tmp_path / name
        runs = [_run(i, [10 + i, 20, 70 - third - i, third], trial="eagle") for i in range(3)]
        path.write_bytes(json.dumps(build_header(start_t_s=0.0)).encode() + b"\n"
                         + b"".join(dump_event(r) + b"\n" for r in runs))
        return path

    rows = compare(load(recording("a.jsonl", 40)), load(recording("b.jsonl", 20)))
    got = {r.metric: (r.verdict, r.n_base, r.n_new) for r in rows if r.metric.startswith("accept_p")}
    assert got["accept_p3"] == ("lower", 3, 3) and got["accept_p1"][0] == "within noise"
    assert all(r.group == "eagle" for r in rows)
