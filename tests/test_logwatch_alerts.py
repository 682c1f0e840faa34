"""Failure kinds, ranks, grouping by alert_id, consequences, decoys and alert timing."""

from __future__ import annotations

import time

import pytest

from tuiapp.events import Alert
from tuiapp.logwatch.watcher import LogWatcher

TS = "2026-01-01 12:00:00"


def tb(rank: int | None, final: str, head: str = "Scheduler hit an exception: ") -> str:
    tag = f" TP{rank}" if rank is not None else ""
    return (f"[{TS}{tag}] {head}Traceback (most recent call last):\n"
            '  File "/sglang/srt/managers/scheduler.py", line 6367, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            f"{final}\n")


def alerts_of(text: str) -> list[Alert]:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    w.feed(text.encode())
    w.flush()
    return out


def final_state(alerts: list[Alert]) -> list[Alert]:
    return list({a.alert_id: a for a in alerts}.values())


@pytest.mark.parametrize(("final", "kind"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 94.97 GiB", "oom"),
    ("RuntimeError: CUDA error: out of memory", "oom"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.78", "oom"),
    ("RuntimeError: Decode out of memory. Try to lower your batch size.", "oom"),
    ("Exception: Capture cuda graph failed: CUDA error: out of memory", "oom"),
    ("Exception: Capture prefill CUDA graph failed: something", "oom"),
    ("AssertionError: bad shape", "assertion"),
    ("AssertionError", "assertion"),
    ("KeyError: 12", "keyerror"),
    ("torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, unhandled cuda error", "nccl"),
    ("RuntimeError: NCCL error: unhandled system error", "nccl"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "jit_arch"),
    ("RuntimeError: FlashInfer JIT: unsupported GPU architecture sm_120a", "jit_arch"),
    ("ValueError: invalid literal for int() with base 10: 'x'", "error"),
])
def test_traceback_kinds(final: str, kind: str) -> None:
    (a,) = alerts_of(tb(4, final))
    assert (a.alert_kind, a.ranks, a.first_line, a.severity) == (kind, [4], 1, "error")
    assert a.message == final
    assert a.traceback.startswith(f"[{TS} TP4] Scheduler hit an exception")


@pytest.mark.parametrize(("line", "kind", "ranks", "severity"), [
    ("Subprocess scheduler_6 (pid=123) crashed with exit code -9. Triggering SIGQUIT for cleanup...", "crash", [6], "error"),
    ("Rank 2 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.", "crash", [2], "error"),
    ("Received sigquit from a child process. It usually means the child failed.", "crash", [], "error"),
    ("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "hang", [], "error"),
    ("Watchdog timeout (self.watchdog_timeout=300)", "hang", [], "error"),
    ("KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 900, #new_token_ratio: 0.41 -> 0.55", "kv_pressure", [], "warning"),
    ("Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.", "hang", [], "warning"),
    ("decode out of memory happened, #retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000", "kv_pressure", [], "warning"),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use", "error", [], "error"),
])
def test_single_line_signals(line: str, kind: str, ranks: list[int], severity: str) -> None:
    (a,) = alerts_of(f"[{TS}] {line}\n")
    assert (a.alert_kind, a.ranks, a.severity, a.message) == (kind, ranks, severity, line)


def test_eight_identical_tracebacks_are_one_alert_with_growing_ranks() -> None:
    final = "AssertionError: hidden_states.shape[0]=8192 > 4096"
    text = "".join(tb(r, final) + f"[{TS}] INFO:     127.0.0.1:1 - \"POST /generate HTTP/1.1\" 200 OK\n" for r in (3, 0, 7, 1, 2, 6, 5, 4))
    alerts = alerts_of(text)
    assert len({a.alert_id for a in alerts}) == 1
    assert [len(a.ranks) for a in alerts] == list(range(1, 9))  # one update per new rank
    assert alerts[-1].ranks == list(range(8)) and alerts[-1].first_line == 1


def test_group_window_splits_incidents_apart_in_time() -> None:
    text = tb(0, "KeyError: 12").replace(TS, "2026-01-01 12:00:00") + tb(1, "KeyError: 12").replace(TS, "2026-01-01 12:00:09")
    alerts = alerts_of(text)
    assert [(a.ranks, a.first_line) for a in final_state(alerts)] == [([0], 1), ([1], 5)]


def test_different_failures_are_different_alerts() -> None:
    alerts = final_state(alerts_of(tb(0, "AssertionError: a") + tb(1, "torch.OutOfMemoryError: CUDA out of memory.")))
    assert [(a.alert_kind, a.ranks) for a in alerts] == [("assertion", [0]), ("oom", [1])]


def test_the_death_after_an_error_is_its_own_crash_incident() -> None:
    text = (tb(3, "AssertionError: x")
            + f"[{TS}] Received sigquit from a child process. It usually means the child failed.\n"
            + f"[{TS}] Subprocess scheduler_3 (pid=1) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n"
            + "Killed\n")
    assertion, crash = final_state(alerts_of(text))
    assert (assertion.alert_kind, assertion.ranks, assertion.caused_by) == ("assertion", [3], None)
    assert (crash.alert_kind, crash.ranks, crash.first_line) == ("crash", [3], 5)
    assert crash.caused_by == assertion.alert_id
    # every death line joined one incident; the one that says how it died is shown
    assert crash.message.startswith("Subprocess scheduler_3 (pid=1) crashed with exit code -6")
    assert crash.signature_line == 6


def test_an_error_the_server_survives_has_no_crash() -> None:
    text = (f"[{TS} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.4 -> 0.6\n"
            f"[{TS} TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.91, gen throughput (token/s): 80.00, #queue-req: 1\n")
    assert [a.alert_kind for a in final_state(alerts_of(text))] == ["kv_pressure"]


def test_sigquit_printed_before_the_traceback_still_names_its_cause() -> None:
    text = (f"[{TS}] Received sigquit from a child process. It usually means the child failed.\n"
            + tb(2, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."))
    crash, oom = final_state(alerts_of(text))
    assert (crash.alert_kind, oom.alert_kind) == ("crash", "oom")
    assert crash.caused_by == oom.alert_id


def test_an_orderly_shutdown_is_not_a_death() -> None:
    text = (f"[{TS}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
            f"[{TS}] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].\n"
            f"[{TS}] Subprocess scheduler_0 (pid=168915) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n"
            f"[{TS}] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
            "Killed\n")
    assert alerts_of(text) == []
    # the same exits without the SIGTERM before them are a death
    died = alerts_of(text.split("\n", 2)[2])
    assert [a.alert_kind for a in final_state(died)] == ["crash"]


def test_crash_lines_alone_are_one_crash_incident() -> None:
    text = (f"[{TS}] Subprocess scheduler_1 (pid=1) crashed with exit code -9. Triggering SIGQUIT for cleanup...\n"
            f"[{TS}] Subprocess scheduler_4 (pid=2) crashed with exit code -9. Triggering SIGQUIT for cleanup...\n"
            f"[{TS}] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n")
    alerts = alerts_of(text)
    assert [(a.alert_kind, a.ranks) for a in final_state(alerts)] == [("crash", [1, 4])]
    assert alerts[0].message.startswith("Subprocess scheduler_1")


def test_prefill_oom_logged_then_raised_is_one_incident() -> None:
    msg = "Prefill out of memory. Try to lower your batch size.\nTry to allocate 9216 tokens.\nAvailable tokens: 8120"
    text = f"[{TS} TP0] {msg}\n" + tb(0, "RuntimeError: " + msg)
    alerts = alerts_of(text)
    (last,) = final_state(alerts)
    assert last.alert_kind == "oom" and last.ranks == [0] and last.first_line == 1
    assert last.message == "RuntimeError: Prefill out of memory. Try to lower your batch size."
    assert "Traceback" in last.traceback


def test_torch_rank_prefixed_interleaved_tracebacks() -> None:
    lines = ["Traceback (most recent call last):", '  File "a.py", line 1, in f', "    f()",
             "torch.distributed.DistBackendError: NCCL error in: x.hpp:1, unhandled cuda error"]
    text = "".join(f"[rank{r}]: {ln}\n" for ln in lines for r in (2, 0, 1))
    (a,) = final_state(alerts_of(text))
    assert (a.alert_kind, a.ranks, a.first_line) == ("nccl", [0, 1, 2], 1)
    assert a.message.startswith("torch.distributed.DistBackendError")


def test_traceback_cut_by_another_rank_still_completes() -> None:
    text = (f"[{TS} TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
            f"[{TS} TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0\n"
            '  File "x.py", line 1, in f\n'
            "    f()\n"
            "KeyError: 'w13_weight'\n")
    (a,) = alerts_of(text)
    assert (a.alert_kind, a.ranks, a.first_line, a.message) == ("keyerror", [1], 1, "KeyError: 'w13_weight'")


def test_nccl_watchdog_lines_and_terminate_group() -> None:
    work = "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=7168, NumelOut=7168, Timeout(ms)=600000) ran for 600074 milliseconds before timing out."
    text = "".join(f"[rank{r}]:[E0101 12:00:00.{r}1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: {work}\n" for r in range(4))
    text += ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
             f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective operation timeout: {work}\n"
             "gpu-1:1:1 [6] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n")
    alerts = final_state(alerts_of(text))
    # one NCCL burst, however worded, is one incident
    assert [(a.alert_kind, a.ranks, a.severity) for a in alerts] == [("nccl", [0, 1, 2, 3, 5, 6], "error"),
                                                                      ("crash", [5], "error")]
    # terminate is also the death of rank 5's process: its own incident, caused by the timeout
    assert alerts[1].caused_by == alerts[0].alert_id
    assert alerts[0].message.startswith("Watchdog caught collective operation timeout")


def test_nccl_warn_alone_is_a_warning_and_a_later_error_upgrades_it() -> None:
    warn = "gpu-1:1:1 [2] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n"
    (a,) = alerts_of(warn)
    assert (a.alert_kind, a.severity, a.ranks) == ("nccl", "warning", [2])
    alerts = alerts_of(warn + tb(2, "torch.distributed.DistBackendError: NCCL error in: x.hpp:1, remote process exited"))
    assert len({x.alert_id for x in alerts}) == 1
    assert (alerts[-1].severity, alerts[-1].message) == ("error", "torch.distributed.DistBackendError: NCCL error in: x.hpp:1, remote process exited")


@pytest.mark.parametrize("line", [
    "Receive: obj=GenerateReqInput(text='Why does my GPU run out of memory? AssertionError KeyError: 12', stream=True)",
    "WARNING: if you see CUDA out of memory, try --mem-fraction-static 0.7",
    "server_args={'enable_torch_symm_mem': True, 'watchdog_timeout': 300, 'note': 'Scheduler watchdog timeout'}",
    "server_args=ServerArgs(model_path='x', disable_cuda_graph=False, enable_torch_symm_mem=False)",
    "Setup Custom allreduce failed with Cuda error 217 'peer access is not supported'. To silence this warning, specify --disable-custom-all-reduce explicitly.",
    "TorchSymmMemCommunicator: Device capability (12, 0) not supported, communicator is not available.",
    "INFO:     127.0.0.1:5450 - \"POST /v1/out-of-memory/AssertionError HTTP/1.1\" 404 Not Found",
    "Cache not flushed because there are pending requests. #queue-req: 1, #running-req: 2",
    "--enable-flashinfer-allreduce-fusion is deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead.",
])
def test_decoys_raise_nothing(line: str) -> None:
    assert alerts_of(f"[{TS} TP0] {line}\n") == []


def test_raw_decoys_raise_nothing() -> None:
    text = ("gpu-1:4100:4100 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\n"
            "[Gloo] Rank 0 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
            "\rLoading safetensors checkpoint shards:  50% Completed | 32/64\rLoading: out of memory? no: 100%\n"
            "/x/launch_server.py:12: UserWarning: out of memory is not an error here\n"
            "[rank0]:[W0101 12:00:00.1 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.\n"
            "[rank0]:[W0101 12:00:01.1 ProcessGroupNCCL.cpp:1250] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.\n"
            "  warnings.warn(\n")
    assert alerts_of(text) == []


def test_keyboard_interrupt_is_not_an_alert() -> None:
    assert alerts_of(tb(None, "KeyboardInterrupt", head="")) == []


def test_alert_fires_on_idle_without_a_next_record() -> None:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    w.feed(tb(2, "AssertionError: x").encode(), now_s=10.0)
    w.poll(10.01)
    assert out == []  # a chained exception could still follow
    w.poll(10.04)
    assert [a.alert_kind for a in out] == ["assertion"]


def test_alert_fires_when_the_next_record_starts() -> None:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    w.feed((tb(2, "AssertionError: x") + f"[{TS} TP0] next\n").encode(), now_s=10.0)
    assert [a.alert_kind for a in out] == ["assertion"]


def test_unfinished_traceback_waits_for_its_exception_line() -> None:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    head = f"[{TS} TP5] Scheduler hit an exception: Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
    w.feed(head.encode(), now_s=0.0)
    w.poll(0.5)
    assert out == []
    w.feed(b"    f()\ntorch.OutOfMemoryError: CUDA out of memory.\n", now_s=0.6)
    w.poll(0.7)
    assert [(a.alert_kind, a.ranks) for a in out] == [("oom", [5])]


def test_warning_incident_becomes_an_error_when_the_watchdog_fires() -> None:
    text = (f"[{TS}] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.\n"
            f"[{TS} TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n")
    alerts = alerts_of(text)
    assert len({a.alert_id for a in alerts}) == 1
    assert [(a.severity, a.ranks) for a in alerts] == [("warning", []), ("error", [0])]
    assert alerts[-1].message.startswith("Scheduler watchdog timeout")


def test_feed_and_poll_from_two_threads() -> None:
    import threading

    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            w.poll()
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        for r in range(8):
            data = (tb(r, "AssertionError: same") + f"[{TS}] INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n").encode()
            for i in range(0, len(data), 13):
                w.feed(data[i:i + 13])
    finally:
        stop.set()
        t.join()
    w.flush()
    assert [(a.alert_kind, a.ranks) for a in final_state(out)] == [("assertion", list(range(8)))]


def test_torch_rank_stream_after_a_traceback_starts_new_records() -> None:
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "a.py", line 1, in f\n'
            "[rank0]: ValueError: first\n"
            "[rank0]: \n"
            "[rank0]: The above exception was the direct cause of the following exception:\n"
            "[rank0]: \n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "b.py", line 2, in g\n'
            "[rank0]: KeyError: 'second'\n"
            "[rank0]: some later output from the same process\n"
            "[rank0]: torch.OutOfMemoryError: CUDA out of memory. printed later, not part of it\n")
    alerts = final_state(alerts_of(text))
    assert [(a.alert_kind, a.first_line, a.message) for a in alerts] == [
        ("keyerror", 1, "KeyError: 'second'"),
        ("oom", 11, "torch.OutOfMemoryError: CUDA out of memory. printed later, not part of it")]


def test_chained_traceback_arriving_in_pieces_updates_the_same_alert() -> None:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    w.feed(tb(6, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.").encode(), now_s=0.0)
    w.poll(0.05)  # a stall longer than the idle timeout: the first part is finished
    assert [(a.alert_kind, a.ranks) for a in out] == [("oom", [6])]
    w.feed(b"\nThe above exception was the direct cause of the following exception:\n\n"
           b"Traceback (most recent call last):\n"
           b'  File "runner.py", line 603, in capture\n'
           b"    raise Exception(\n"
           b"Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB.\n", now_s=0.1)
    w.flush(now_s=0.2)
    assert len({a.alert_id for a in out}) == 1
    last = out[-1]
    assert (last.alert_kind, last.ranks, last.first_line) == ("oom", [6], 1)
    assert last.message == "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB."
    # a later rank whose traceback came whole joins the same incident
    w.feed(tb(2, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.").encode(), now_s=0.3)
    w.flush(now_s=0.4)
    assert len({a.alert_id for a in out}) == 1 and out[-1].ranks == [2, 6]


def test_message_ending_with_colon_waits_for_its_continuation() -> None:
    out: list[Alert] = []
    w = LogWatcher(lambda e: out.append(e) if isinstance(e, Alert) else None)
    w.feed(tb(0, "RuntimeError: Ninja build failed. Ninja output:").encode(), now_s=0.0)
    w.poll(0.1)
    assert out == []  # "...output:" promises more
    w.feed(b"nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n", now_s=0.2)
    w.poll(0.3)
    assert [(a.alert_kind, a.ranks, a.message) for a in out] == [
        ("jit_arch", [0], "nvcc fatal   : Unsupported gpu architecture 'compute_120a'")]


def test_ctrl_c_tracebacks_are_not_alerts() -> None:
    assert alerts_of(tb(0, "KeyboardInterrupt") + tb(1, "KeyboardInterrupt")) == []


def test_a_peer_named_in_the_message_is_not_a_rank_of_the_alert() -> None:
    (a,) = alerts_of(tb(3, "torch.distributed.DistBackendError: [Rank 5] NCCL error: remote process exited"))
    assert a.ranks == [3]


def test_tracebacks_interleaved_line_by_line_in_the_main_stream() -> None:
    head = "Scheduler hit an exception: Traceback (most recent call last):"
    text = (f"[{TS} TP0] {head}\n[{TS} TP1] {head}\n[{TS} TP2] {head}\n"
            '  File "x.py", line 1, in f\n  File "x.py", line 1, in f\n'
            "    g()\n    g()\n"
            "AssertionError: boom\nAssertionError: boom\n")
    # TP2 never got an exception line: it is the same failure, not an "error" of its own
    alerts = final_state(alerts_of(text))
    assert [(a.alert_kind, a.ranks, a.first_line) for a in alerts] == [("assertion", [0, 1, 2], 1)]


def test_the_oom_killer_hint_survives_a_later_generic_initialization_failure() -> None:
    died = ("Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common "
            "cause is the OS OOM killer. Run `dmesg -T` to check for OOM killer invocations.")
    text = (f"[{TS}] {died}\n"
            "Traceback (most recent call last):\n"
            '  File "/sglang/srt/entrypoints/engine.py", line 1277, in _wait_for_scheduler_ready\n'
            "    raise RuntimeError(\n"
            "RuntimeError: Initialization failed. Please see the error messages above.\n")
    (a,) = final_state(alerts_of(text))
    assert (a.alert_kind, a.ranks, a.message, a.signature_line) == ("crash", [3], died, 1)


def test_a_scheduler_is_dead_line_and_its_exit_code_are_one_death() -> None:
    text = ("[12-16 14:27:08] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            "[12-16 14:27:10] Exit code: -9\n")
    (a,) = final_state(alerts_of(text))
    assert (a.alert_kind, a.ranks) == ("crash", [0])
    assert a.message == "Rank 0 scheduler is dead. Please check if there are relevant logs. Exit code: -9"
    assert alerts_of("[12-16 14:27:10] Exit code: 0\n") == []


def test_markdown_a_user_typed_around_a_line_hides_nothing() -> None:
    (a,) = final_state(alerts_of("**RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.**\n"))
    assert (a.alert_kind, a.message) == ("oom", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")


def test_a_line_a_terminal_wrapped_is_read_whole() -> None:
    # a long exception line, as an 80-column terminal capture breaks it
    line = "RuntimeError: Expected all tensors to be on the same device, but CUDA error: out of memory happened here"
    text = tb(None, line[:80] + "\n" + line[80:])
    (a,) = final_state(alerts_of(text))
    assert a.alert_kind == "oom" and a.message == line


def test_a_failure_quoted_in_a_logging_error_dump_is_still_a_death() -> None:
    text = ("--- Logging error ---\n"
            '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/entrypoints/engine.py", line 343, in sigquit_handler\n'
            "    logger.error(\n"
            "Message: 'Received sigquit from a child proces. It usually means the child failed.'\n")
    (a,) = final_state(alerts_of(text))
    assert (a.alert_kind, a.first_line, a.signature_line) == ("crash", 1, 4)


def test_a_cause_printed_as_a_repr() -> None:
    text = (f"[{TS} TP1] Scheduler hit an exception: RuntimeError(\"CUDA error: out of memory\")\n"
            f"[{TS} TP2] Scheduler hit an exception: ValueError('bad sampling params')\n")
    oom, err = final_state(alerts_of(text))
    assert (oom.alert_kind, oom.ranks, oom.message) == ("oom", [1], "RuntimeError: CUDA error: out of memory")
    assert (err.alert_kind, err.ranks) == ("error", [2])


def test_c10_times_keep_two_collective_failures_hours_apart_apart() -> None:
    def watchdog(t: str, seq: int) -> str:
        return (f"[rank0]:[E321 {t}.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
                f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n")
    dated = "[2025-03-21 01:00:00 TP0] Load weight begin. avail mem=78.38 GB\n"
    # E321 is 21 March: the year comes from the dated SGLang line before it
    alerts = final_state(alerts_of(dated + watchdog("02:07:08", 1580) + watchdog("02:07:09", 1580) + watchdog("05:07:08", 9580)))
    assert [(a.alert_kind, a.first_line) for a in alerts] == [("nccl", 2), ("nccl", 4)]
