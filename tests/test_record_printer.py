import io

from tuiapp.events import Alert, GpuSample, Note, RunDone, ServerInfo, ServerState
from tuiapp.record.printer import Printer


def test_lines_per_fact_alert_updates_and_gpu_cadence() -> None:
    out = io.StringIO()
    p = Printer(out, gpu_every_s=10)
    p.handle(ServerState(t_s=0, state="starting", pid=7, url="http://h:1"))
    for s in range(31):
        for i in range(8):
            p.handle(GpuSample(t_s=s, index=i, mem_used_bytes=(70 + i) * 2**30, mem_total_bytes=96 * 2**30,
                               pcie_rx_bytes_s=1e9 * (i + 1), pcie_tx_bytes_s=5e8, util_pct=90))
    p.handle(Alert(t_s=12, alert_kind="assertion", message="AssertionError: x", ranks=[3], first_line=40, alert_id=4))
    p.handle(Alert(t_s=12.1, alert_kind="assertion", message="AssertionError: x", ranks=[3], first_line=40, alert_id=4))
    p.handle(Alert(t_s=12.2, alert_kind="assertion", message="AssertionError: x", ranks=[3, 5], first_line=40,
                   alert_id=4))
    p.handle(RunDone(t_s=20, run_index=0, requests=5, duration_s=14, decode_tok_s=89.8, output_tok_s=88.4,
                     ttft_s=0.0451, tpot_s=0.01113, accept_length=2.31, trial="base"))
    p.handle(Note(t_s=21, level="warning", text="telemetry off", source="nvml"))
    lines = out.getvalue().splitlines()
    tags = [line.split()[1] for line in lines]
    assert tags.count("gpus") == 3  # at 10, 20 and 30 s, not 248 samples
    assert tags.count("ALERT") == 2  # new, then the update that added rank 5; the repeat is silent
    alert_lines = [line for line in lines if " ALERT " in line]
    assert "assertion error new ranks=3 line=40" in alert_lines[0] and "update ranks=3,5" in alert_lines[1]
    run = next(line for line in lines if " run " in line)
    assert "decode=89.8 tok/s/stream output=88.4 tok/s/aggregate ttft_mean=45.1 ms tpot_mean=11.13 ms accept=2.31" in run
    gpu = next(line for line in lines if " gpus " in line)
    assert "mem max gpu7 77.0/96.0 GiB" in gpu and "pcie rx sum 36.00 GB/s max gpu7 8.00" in gpu
    assert "warning [nvml] telemetry off" in lines[-1]
    summary = p.summary(interrupted=True)
    assert summary.startswith("summary: 0m30s, 1 run, 0 requests (0 failed), 1 alert (assertion x1), interrupted")
    assert "trial base: mean 89.80 sd n/a" in summary


class _HungUp(io.StringIO):
    def write(self, _s: str) -> int:
        raise OSError(5, "Input/output error")


def test_a_hung_up_stdout_stops_printing_but_not_counting() -> None:
    p = Printer(_HungUp())
    p.handle(RunDone(t_s=1, run_index=0, requests=1, duration_s=1, decode_tok_s=50.0, output_tok_s=50.0))
    p.handle(RunDone(t_s=2, run_index=1, requests=1, duration_s=1, decode_tok_s=52.0, output_tok_s=50.0))
    assert isinstance(p.stream_error, OSError)
    assert "mean 51.00 sd 1.41" in p.summary()


def test_server_info_line_leaves_out_unknown_speculative_settings() -> None:
    out = io.StringIO()
    p = Printer(out)
    p.handle(ServerInfo(t_s=0, url="http://h:1", version="0.5.6", speculative_algorithm="EAGLE3",
                        speculative_num_steps=3))
    line = out.getvalue()
    assert line.endswith(" spec=EAGLE3 steps=3\n")


def test_nodes_first_error_cancelled_and_other_servers() -> None:
    from tuiapp.events import RequestDone

    out = io.StringIO()
    p = Printer(out)
    p.handle(ServerInfo(t_s=0, url="http://x", model_path="/m", engine="openai"))
    p.handle(Alert(t_s=1, alert_kind="oom", message="CUDA out of memory", ranks=[0, 8], alert_id=7,
                   nodes=["node1", "node2"]))
    p.handle(RequestDone(t_s=2, run_index=0, request_index=0, ok=False, error="HTTP 500: boom"))
    p.handle(RequestDone(t_s=3, run_index=0, request_index=1, ok=False, error="cancelled", cancelled=True))
    p.handle(RunDone(t_s=4, run_index=0, requests=3, errors=2, duration_s=1.0, decode_tok_s=10.0,
                     output_tok_s=9.0, first_error="HTTP 422: Unexpected fields in the request: {'x'}\nmore"))
    text = out.getvalue()
    assert "info     openai-compatible server model=/m" in text
    assert "ALERT    oom error new nodes=node1,node2 ranks=0,8" in text
    assert "errors=2 (HTTP 422: Unexpected fields in the request: {'x'} more)" in text
    assert "1 request (1 failed, 1 cancelled)" in p.summary()


def test_the_summary_says_why_a_start_failed_and_tabulates_loads_unpooled() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "data" / "tui"))
    import modes

    p = Printer(io.StringIO())
    for ev in modes.failed_launch():
        p.handle(ev)
    assert "result launch: failed (port 30000 on 127.0.0.1 is in use" in p.summary()
    p = Printer(io.StringIO())
    for ev in modes.curve():
        p.handle(ev)
    text = p.summary()
    assert "over runs (all runs)" not in text  # a sweep's loads are never pooled
    rows = {line.split("  ")[1].strip(): line for line in text.splitlines() if line.startswith("  ") and "  " in line[2:]}
    assert "Output token throughput (tok/s)" in rows and "Median TTFT (ms)" in rows
