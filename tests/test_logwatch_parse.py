"""Prefixes, records, line numbers, Decode/Prefill statistics and readiness."""

from __future__ import annotations

import pytest

from tuiapp.events import LogLine, ServerState, ServerStats
from tuiapp.logwatch.batchstats import parse_batch_line
from tuiapp.logwatch.prefix import parse_sglang_prefix
from tuiapp.logwatch.watcher import LogWatcher


def run(text: str | bytes) -> list:
    events: list = []
    w = LogWatcher(events.append)
    w.feed(text.encode() if isinstance(text, str) else text)
    w.flush()
    return events


def of(events: list, cls: type) -> list:
    return [e for e in events if isinstance(e, cls)]


def test_prefix_tags_and_ray() -> None:
    p = parse_sglang_prefix("[2026-01-01 12:00:00 DP1 TP3 EP3] hello")
    assert p is not None and (p.tp, p.dp, p.ep) == (3, 1, 3)
    line = "[2026-01-01 12:00:00 DP1 TP3 EP3] hello"
    assert line[p.end:] == "hello"
    p = parse_sglang_prefix("(SGLangEngine pid=17, ip=10.0.0.2) [2026-01-01 12:00:00.250 TP0] x")
    assert p is not None and p.tp == 0 and p.log_t_s % 1 == 0.25
    assert parse_sglang_prefix("[2026-01-01 12:00:00] x").tp is None
    assert parse_sglang_prefix("[rank3]: Traceback") is None
    assert parse_sglang_prefix("[Gloo] Rank 0 is connected to 7 peer ranks") is None


def test_decode_line_0523_with_spec() -> None:
    src, f = parse_batch_line(
        "Decode batch, #running-req: 3, #token: 4120, token usage: 0.02, accept len: 3.21, accept rate: 0.74, "
        "cuda graph: True, gen throughput (token/s): 89.52, #queue-req: 1")
    assert src == "log_decode"
    assert f == {"running_reqs": 3, "num_tokens": 4120, "token_usage": 0.02, "accept_length": 3.21,
                 "accept_rate": 0.74, "cuda_graph": True, "gen_throughput_tok_s": 89.52, "queue_reqs": 1}


def test_decode_line_older_spelling_iter_and_extras() -> None:
    src, f = parse_batch_line(
        "Decode batch [1200]. #running-req: 1, #token: 630, token usage: 0.00, cuda graph: False, "
        "gen throughput (token/s): 82.31, #queue-req: 0, ")
    assert src == "log_decode" and f["gen_throughput_tok_s"] == 82.31 and f["cuda_graph"] is False
    _, f = parse_batch_line(
        "Decode batch, #running-req: 8, #full token: 900, full token usage: 0.10, #swa token: 50, swa token usage: 0.01, "
        "pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 2, cuda graph: True, "
        "gen throughput (token/s): 400.00, #queue-req: 3, est. decode TFLOPS/s (per GPU): 12.1")
    assert f["num_tokens"] == 900 and f["token_usage"] == 0.10 and f["retracted_reqs"] == 2
    assert f["gen_throughput_tok_s"] == 400.0 and f["queue_reqs"] == 3


def test_prefill_line() -> None:
    src, f = parse_batch_line(
        "Prefill batch, #new-seq: 2, #new-token: 60, #cached-token: 4, token usage: 0.01, #running-req: 1, "
        "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 1234.50")
    assert src == "log_prefill"
    assert (f["new_seqs"], f["new_tokens"], f["cached_tokens"], f["input_throughput_tok_s"]) == (2, 60, 4, 1234.5)
    assert parse_batch_line("Decode batches are great") is None
    assert parse_batch_line("Receive: Decode batch, #running-req: 1") is None


def test_stats_events_carry_dp_rank_and_ready_state() -> None:
    events = run(
        "(Actor pid=9, ip=10.0.0.1) [2026-01-01 12:00:00 DP1 TP4 EP4] Decode batch [40], #running-req: 2, #token: 10, "
        "token usage: 0.00, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 0\n"
        "[2026-01-01 12:00:01] The server is fired up and ready to roll!\n")
    stats = of(events, ServerStats)
    assert len(stats) == 1 and stats[0].source == "log_decode" and stats[0].dp_rank == 1
    assert stats[0].gen_throughput_tok_s == 300.0
    assert [s.state for s in of(events, ServerState)] == ["ready"]
    lines = of(events, LogLine)
    assert [(ln.line_no, ln.tp_rank, ln.dp_rank, ln.ep_rank) for ln in lines] == [(1, 4, 1, 4), (2, None, None, None)]


def test_traceback_is_one_record_with_its_first_line() -> None:
    events = run(
        "[2026-01-01 12:00:00 TP0] Load weight begin. avail mem=94.12 GB\n"
        "[2026-01-01 12:00:01 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n'
        "    g()\n"
        "KeyError: 12\n"
        "[2026-01-01 12:00:01 TP0] next\n")
    lines = of(events, LogLine)
    assert [ln.line_no for ln in lines] == [1, 2, 6]
    assert lines[1].text.count("\n") == 3 and lines[1].tp_rank == 2 and lines[1].level == "error"


def test_line_numbers_count_newlines_only() -> None:
    bar = "\rLoading: 10%|█ | 1/10\rLoading: 50%|█████ | 5/10\rLoading: 100%|██████████| 10/10"
    events = run(
        "[2026-01-01 12:00:00 TP0] a\n" + bar + "\n"
        "[2026-01-01 12:00:00 TP0] b\r\n"  # CRLF ending
        "[2026-01-01 12:00:00 TP0] c\n")
    lines = of(events, LogLine)
    assert [ln.line_no for ln in lines] == [1, 2, 3, 4]
    assert lines[1].text == "Loading: 100%|██████████| 10/10"
    assert lines[2].text.endswith("] b")


def test_record_embedded_after_a_progress_bar() -> None:
    events = run(
        "\rCapturing batches: 10%|█ | 5/52\r[2026-01-01 12:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n'
        "AssertionError: boom\n")
    lines = of(events, LogLine)
    assert lines[0].line_no == 1 and lines[0].tp_rank == 3
    assert [a.ranks for a in events if a.kind == "alert"] == [[3]]


def test_levels() -> None:
    events = run(
        "[2026-01-01 12:00:00 TP0] Setup Custom allreduce failed with Cuda error 217. To silence this warning, "
        "specify --disable-custom-all-reduce explicitly.\n"
        "[2026-01-01 12:00:00] INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n"
        "[rank1]:[W0101 12:00:00.1 ProcessGroupNCCL.cpp:1]  Warning: something\n"
        "[rank1]:[E0101 12:00:00.1 ProcessGroupNCCL.cpp:2] [Rank 1] Timeout at NCCL work: 5\n")
    assert [ln.level for ln in of(events, LogLine)] == ["warning", "info", "warning", "error"]
    assert of(events, LogLine)[2].tp_rank == 1


def test_every_sglang_prefix_seen_across_versions() -> None:
    cases = {
        "[2025-02-22 08:19:45 TP26] x": (26, None, None),  # multi-node: ranks beyond 7
        "[2026-05-26 15:19:18 PP2 ATTN_CP6 TP6] x": (6, None, None),
        "[2026-05-13 02:15:18.123 DP3 MOE_DP1 TP3 EP3] x": (3, 3, 3),
        "[04:40:55 TP0] x": (0, None, None),  # 0.2/0.3: time only
        "[12-16 14:27:08] x": (None, None, None),  # diffusion runtime: month-day
        "[TP0] x": (0, None, None),  # no time
        "2026-05-24 03:51:44 TP0] x": (0, None, None),  # a paste that lost the "["
    }
    for line, tags in cases.items():  # (tp, dp, ep)
        p = parse_sglang_prefix(line)
        assert p is not None, line
        assert (p.tp, p.dp, p.ep) == tags, line
        assert line[p.end:] == "x", line
    a, b = parse_sglang_prefix("[12-16 14:27:08] x"), parse_sglang_prefix("[12-16 14:27:10] x")
    assert a and b and a.log_t_s is not None and b.log_t_s == a.log_t_s + 2
    assert parse_sglang_prefix("[TP0] x").log_t_s is None
    for not_prefix in ("[INFO] POST", "[E421 02:05:38.764 ProcessGroupGloo.cpp:143] x", "[PG 3 Rank 5] x",
                       "2025-04-07T19:13:52.317869663Z x", "[16:43:29x"):
        assert parse_sglang_prefix(not_prefix) is None, not_prefix


def test_c10_prefix_month_is_not_zero_padded() -> None:
    from tuiapp.logwatch.prefix import parse_c10_prefix

    c = parse_c10_prefix("[E210 02:06:33.347 file.cpp:1595] x")
    assert c is not None and (c.level, c.month, c.day, c.time) == ("E", 2, 10, "02:06:33.347")
    c = parse_c10_prefix("[W1129 10:00:00.123456789 ProcessGroupNCCL.cpp:632] x")
    assert c is not None and (c.level, c.month, c.day) == ("W", 11, 29)
    # and the tag is taken off, so the rules see the message
    (a,) = [e for e in run("[rank1]:[E210 02:06:33.347982 ProcessGroupNCCL.cpp:1595] [PG ID 0 Rank 1] "
                           "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5) ran for 600000 ms\n")
            if e.kind == "alert"]
    assert (a.alert_kind, a.ranks) == ("nccl", [1])


def test_envelope_is_decided_from_the_first_lines_and_kept_for_display() -> None:
    from tuiapp.logwatch.envelope import EnvelopeDetector

    d = EnvelopeDetector()
    lines = [f"sglang-1  | 2025-04-07T19:13:52.{k:09d}Z [2026-01-01 12:00:0{k} TP0] line {k}" for k in range(9)]
    assert [d.unwrap(t) for t in lines][0] == "[2026-01-01 12:00:00 TP0] line 0"
    assert d.decided and d.layers == ["compose", "docker_ts"]
    # a line without the envelope (a collector that split a long line) is left as it is
    assert d.unwrap("  continued") == "  continued"
    # a log without an envelope keeps its lines whole, even one that looks like one later
    d = EnvelopeDetector()
    for k in range(9):
        d.unwrap(f"[2026-01-01 12:00:0{k}] line {k}")
    assert d.layers == [] and d.unwrap("web-1  | hello") == "web-1  | hello"
    # LogLine events show the line as printed
    ev = run("[pod/sglang-0/sglang] [2026-01-01 12:00:00 TP0] Load weight begin. avail mem=78.38 GB\n")
    (log,) = of(ev, LogLine)
    assert log.text.startswith("[pod/sglang-0/sglang] ") and log.tp_rank == 0


def test_colours_and_ray_tags_come_off_anywhere() -> None:
    from tuiapp.logwatch.envelope import strip_ansi, strip_ray

    assert strip_ansi("\x1b[36m(WorkerDict pid=1)\x1b[0m x") == "(WorkerDict pid=1) x"
    assert strip_ansi("^[[36m(WorkerDict pid=1)^[[0m x") == "(WorkerDict pid=1) x"
    assert strip_ray("(WorkerDict pid=616, ip=192.168.149.159) frame #44") == "frame #44"
    assert strip_ray("(sglang) root@epyc:~# python3 -m sglang.launch_server") == "(sglang) root@epyc:~# python3 -m sglang.launch_server"


GLUED = ("Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:01<00:00,  1.93it/s]"
         "[2026-01-01 12:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
         '  File "/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
         "    x()\n"
         "AssertionError: boom\n")
COMPOSE = ("Attaching to sglang-1\n"
           "sglang-1  | [2026-01-01 12:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           'sglang-1  |   File "/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
           "sglang-1  |     x()\n"
           "sglang-1  | KeyError: 12\n"
           "sglang-1 exited with code 1\n")


@pytest.mark.parametrize(("text", "expected"), [
    (GLUED, ("assertion", [3], 1, 4)),  # a record glued after a progress bar is found
    (COMPOSE, ("keyerror", [0], 2, 5)),  # compose prints lines of its own before the prefixed ones
], ids=["glued-after-progress-bar", "compose-own-lines"])
def test_one_alert_with_its_kind_ranks_and_lines(text: str, expected: tuple) -> None:
    (a,) = [e for e in run(text) if e.kind == "alert"]
    assert (a.alert_kind, a.ranks, a.first_line, a.signature_line) == expected
