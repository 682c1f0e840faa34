"""Each modelled failure prints the real strings and ends the process as SGLang does."""

import re
import threading

import httpx
import pytest

from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d{3})?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] (.*)$")
SIGQUIT_STARTUP = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_SERVING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."
SETTLE = "Sleeping 5 seconds before crash diagnostics to let GPU activity settle."


def after_sigquit(recs) -> list[str]:
    """The messages from the parent's SIGQUIT on, as real 0.5.23 prints them (tests/data/logs_real_cpu/)."""
    msgs = [msg for tags, msg in recs]
    return msgs[msgs.index(SIGQUIT_SERVING):]


def records(text: str) -> list[tuple[str, str]]:
    """(rank tags, message) per log record; unprefixed lines continue the previous record."""
    out: list[tuple[str, str]] = []
    for line in text.replace("\r", "\n").split("\n"):
        m = PREFIX.match(line)
        if m:
            out.append((m.group(2).strip(), m.group(3)))
        elif out and line:
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
    return out


def tp_ranks(recs, needle: str) -> list[int]:
    return sorted(int(re.search(r"TP(\d+)", tags).group(1)) for tags, msg in recs if needle in msg and "TP" in tags)


def run_to_death(args, env=None, speed=50.0) -> tuple[int, str]:
    with SimProcess(BASE + args, env=env, speed=speed) as sim:
        rc = sim.wait_exit(timeout_s=30)
        return rc, sim.stderr


def test_torch_symm_mem_keyerror_on_every_rank():
    rc, err = run_to_death(["--enable-torch-symm-mem"])
    assert rc == -9
    recs = records(err)
    assert tp_ranks(recs, "KeyError: 12") == list(range(8))
    keyerr = [msg for _, msg in recs if "KeyError: 12" in msg]
    assert all(m.startswith("Scheduler hit an exception: Traceback (most recent call last):") for m in keyerr)
    assert "TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]" in keyerr[0]
    assert recs[-1] == ("", SIGQUIT_STARTUP)
    assert "The server is fired up" not in err


def test_flashinfer_allreduce_fusion_fails_in_graph_capture():
    rc, err = run_to_death(["--enable-flashinfer-allreduce-fusion"])
    assert rc == -9
    assert "--enable-flashinfer-allreduce-fusion is deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead." in err
    recs = records(err)
    assert tp_ranks(recs, "Exception: Capture cuda graph failed: No supported CUDA architectures found for major versions [9, 10].") == list(range(8))
    assert "RuntimeError: No supported CUDA architectures found for major versions [9, 10]." in err
    assert recs[-1] == ("", SIGQUIT_STARTUP)


def test_ep_flashinfer_a2a_assertion_then_oom():
    rc, err = run_to_death(["--moe-runner-backend", "flashinfer_cutlass", "--moe-a2a-backend", "flashinfer"])
    assert rc == -9
    recs = records(err)
    adj = "flashinfer MoE is enabled. The expert parallel size is adjusted from 1 to the tensor parallel size [8]."
    assert recs[0] == ("", adj)
    assert any(tags.startswith("TP") and " EP" in tags for tags, _ in recs)  # ep>1 adds the EP tag
    first_assert = err.index("\nAssertionError")
    first_oom = err.index("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate")
    assert first_assert < first_oom
    assert len(tp_ranks(recs, "AssertionError")) + len(tp_ranks(recs, "torch.OutOfMemoryError")) == 8
    assert recs[-1] == ("", SIGQUIT_STARTUP)


def test_nccl_tree_with_cuda_graphs_fails_in_capture():
    rc, err = run_to_death([], env={"NCCL_ALGO": "Tree"})
    assert rc == -9
    assert err.count("NCCL WARN Error : no algorithm/protocol available for function AllReduce") == 8
    assert tp_ranks(records(err), "Capture cuda graph failed: NCCL error: invalid usage") == list(range(8))
    assert records(err)[-1] == ("", SIGQUIT_STARTUP)


def test_nccl_tree_without_graphs_serves():
    with SimProcess(BASE + ["--disable-cuda-graph"], env={"NCCL_ALGO": "Tree"}) as sim:
        sim.wait_ready()
        r = httpx.post(sim.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 3}}, timeout=10)
        assert r.status_code == 200


def _generate_in_background(url: str) -> None:
    def go():
        try:
            httpx.post(url + "/generate", json={"text": "go", "sampling_params": {"max_new_tokens": 400, "ignore_eos": True}}, timeout=30)
        except httpx.HTTPError:
            pass  # the server dies under us, as intended
    threading.Thread(target=go, daemon=True).start()


@pytest.mark.parametrize("kind,needle,rank", [
    ("oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of", 3),
    ("assertion", "\nAssertionError", 3),
    ("decode_oom", "RuntimeError: Decode out of memory. Try to lower your batch size.", 0),
])
def test_runtime_scheduler_exception_kills_the_server(kind, needle, rank):
    with SimProcess(BASE + ["--sim-fault", kind], speed=200) as sim:
        sim.wait_ready()
        _generate_in_background(sim.url)
        rc = sim.wait_exit()
        err = sim.stderr
    assert rc == -9
    recs = records(err)
    hit = [(tags, msg) for tags, msg in recs if needle in msg]
    assert hit and hit[0][0] == f"TP{rank}"
    assert hit[0][1].startswith("Scheduler hit an exception: Traceback (most recent call last):")
    tail = after_sigquit(recs)
    assert tail[:2] == [SIGQUIT_SERVING, SETTLE] and tail[-1].startswith("kill_process_tree called: ")


def test_crash_at_a_time_without_traffic():
    # (no wait_ready: at speed 200 the crash comes about a millisecond after ready, and on a busy
    # machine a /health poll may first find the simulator already gone; its log tells it all)
    with SimProcess(BASE + ["--sim-fault", "crash@0.2"], speed=200) as sim:
        rc = sim.wait_exit()
        err = sim.stderr
    assert rc == -9 and "The server is fired up and ready to roll!" in err
    assert re.search(r"Subprocess scheduler_3 \(pid=\d+\) crashed with exit code -9\. Triggering SIGQUIT for cleanup\.\.\.", err)
    tail = after_sigquit(records(err))
    assert tail[:2] == [SIGQUIT_SERVING, SETTLE] and tail[-1].startswith("kill_process_tree called: ")


@pytest.mark.slow
def test_nccl_timeout_on_all_ranks_then_crash():
    with SimProcess(BASE + ["--sim-fault", "nccl_timeout"], speed=1000) as sim:
        sim.wait_ready()
        _generate_in_background(sim.url)
        rc = sim.wait_exit()
        err = sim.stderr
    assert rc == -9
    for r in range(8):
        assert re.search(rf"\[rank{r}\]:\[E\d{{4}} [\d:.]+ \d+ ProcessGroupNCCL.cpp:\d+\] \[Rank {r}\] Watchdog caught "
                         r"collective operation timeout: WorkNCCL\(SeqNum=\d+, OpType=ALLREDUCE", err)
    assert "crashed with exit code -6. Triggering SIGQUIT for cleanup..." in err
    tail = after_sigquit(records(err))
    assert tail[:2] == [SIGQUIT_SERVING, SETTLE] and tail[-1].startswith("kill_process_tree called: ")


def test_hang_trips_the_scheduler_watchdog():
    with SimProcess(BASE + ["--sim-fault", "hang", "--watchdog-timeout", "300"], speed=1000) as sim:
        sim.wait_ready()
        _generate_in_background(sim.url)
        rc = sim.wait_exit()
        err = sim.stderr
    assert rc == -9
    assert tp_ranks(records(err), "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)") == list(range(8))


def test_nan_and_kv_pressure_keep_serving():
    with SimProcess(BASE + ["--sim-fault", "nan", "--sim-fault", "kv_pressure", "--decode-log-interval", "4", "--sim-step-ms", "2"], speed=200) as sim:
        sim.wait_ready()
        body = {"text": "numbers", "sampling_params": {"max_new_tokens": 30, "ignore_eos": True}}
        first = httpx.post(sim.url + "/generate", json=body, timeout=10).json()
        second = httpx.post(sim.url + "/generate", json=body, timeout=10).json()
        assert sim.proc.poll() is None
        assert sim.wait_for("KV cache pool is full. Retract requests.")
        err = sim.stderr
    assert first["meta_info"]["finish_reason"] == {"type": "stop", "matched": "NaN happened"}
    assert second["meta_info"]["finish_reason"] == {"type": "length", "length": 30}
    assert second["meta_info"]["num_retractions"] >= 1
    assert re.search(r"KV cache pool is full\. Retract requests\. #retracted_reqs: 1, #new_tokens_gained: \d+, "
                     r"#new_token_ratio: 0\.7000 -> 1\.0000", err)


def test_dp_attention_prefixes_and_too_few_gpus():
    with SimProcess(BASE + ["--dp", "2", "--enable-dp-attention", "--sim-fault", "crash@0.1"], speed=200) as sim:
        # Not wait_ready(): the fault fires 0.1 s after ready, often before a /health poll sees
        # it (a flake of 1 run in 6). The log says it got ready; the reader threads have all of
        # it once the process is gone.
        sim.wait_exit()
        assert "The server is fired up and ready to roll!" in sim.stderr
        tags = {t for t, msg in records(sim.stderr) if msg == "Init torch distributed begin."}
    assert tags == {f"DP{t // 4} TP{t}" for t in range(8)}
    rc, err = run_to_death(["--dp", "2"])  # 16 scheduler processes on 8 GPUs
    assert rc == -9
    bad = {t for t, msg in records(err) if "RuntimeError: CUDA error: invalid device ordinal" in msg}
    assert bad == {f"DP1 TP{t}" for t in range(8)}
