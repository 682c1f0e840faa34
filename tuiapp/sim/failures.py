"""The exact texts failing SGLang servers print (tracebacks are one record each).

Each builder returns the message of one log record; the caller adds the rank prefix, so
continuation lines carry none. Strings quoted from SGLang / PyTorch / NCCL / FlashInfer
(docs/sglang-interface.md §7.6 and §9, public issue logs); the frames
above the last line are representative, not copied from one real trace.
"""

from __future__ import annotations

import time

from tuiapp.sim import model

SITE = "/usr/local/lib/python3.12/dist-packages"
SG = f"{SITE}/sglang/srt"

SIGQUIT_STARTUP = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_SERVING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."

_SCHED_HEAD = (
    "Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{SG}/managers/scheduler.py", line 6368, in run_scheduler_process\n'
)

_SERVE_FRAMES = (
    "    scheduler.event_loop_overlap()\n"
    f'  File "{SITE}/torch/utils/_contextlib.py", line 120, in decorate_context\n'
    "    return func(*args, **kwargs)\n"
    "           ^^^^^^^^^^^^^^^^^^^^^\n"
    f'  File "{SG}/managers/scheduler.py", line 1612, in event_loop_overlap\n'
    "    batch_result = self.run_batch(batch)\n"
    "                   ^^^^^^^^^^^^^^^^^^^^^\n"
    f'  File "{SG}/managers/scheduler.py", line 3021, in run_batch\n'
    "    batch_result = self.model_worker.forward_batch_generation(worker_batch)\n"
    "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
)

_INIT_FRAMES = (
    "    scheduler = Scheduler(\n"
    "                ^^^^^^^^^^\n"
    f'  File "{SG}/managers/scheduler.py", line 512, in __init__\n'
    "    self.init_model_worker()\n"
    f'  File "{SG}/managers/scheduler.py", line 798, in init_model_worker\n'
    "    self.tp_worker = TpModelWorker(\n"
    "                     ^^^^^^^^^^^^^^\n"
    f'  File "{SG}/managers/tp_worker.py", line 247, in __init__\n'
    "    self._init_model_runner()\n"
    f'  File "{SG}/managers/tp_worker.py", line 330, in _init_model_runner\n'
    "    self._model_runner = ModelRunner(\n"
    "                         ^^^^^^^^^^^^\n"
)

_CAPTURE_TAIL = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)

_CAPTURE_FRAMES = (
    f'  File "{SG}/model_executor/model_runner.py", line 641, in initialize\n'
    "    self.init_device_graphs()\n"
    f'  File "{SG}/model_executor/model_runner_components/cuda_graph_setup.py", line 752, in init_device_graphs\n'
    "    self.graph_runner = DecodeCudaGraphRunner(self)\n"
    "                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    f'  File "{SG}/model_executor/runner/decode_cuda_graph_runner.py", line 412, in __init__\n'
    "    self.capture()\n"
    f'  File "{SG}/model_executor/runner/decode_cuda_graph_runner.py", line 603, in capture\n'
    "    raise Exception(\n"
)


def torch_oom(gpu: int, tried_gib: float, free_gib: float, used_gib: float, alloc_gib: float) -> str:
    """PyTorch 2.x's CUDA OOM text (from a real torch 2.11 OOM: docs/sglang-interface.md §9)."""
    total = model.TORCH_TOTAL_GIB
    reserved_unalloc = max(used_gib - alloc_gib - 0.6, 0.0)
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. GPU {gpu} has a total "
        f"capacity of {total:.2f} GiB of which {free_gib:.2f} GiB is free. Including non-PyTorch memory, this "
        f"process has {used_gib:.2f} GiB memory in use. Of the allocated memory {alloc_gib:.2f} GiB is allocated "
        f"by PyTorch, and {reserved_unalloc:.2f} GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    )


def serving_exception(last_lines: str) -> str:
    return (
        _SCHED_HEAD + _SERVE_FRAMES
        + f'  File "{SG}/managers/tp_worker.py", line 412, in forward_batch_generation\n'
        "    logits_output, can_run_cuda_graph = self.model_runner.forward(forward_batch)\n"
        "                                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        + last_lines
    )


def _free_gib(used_gib: float) -> float:
    """What torch would call free on a GPU with ``used_gib`` in use (the driver keeps its part)."""
    return model.GPU_MEM_TOTAL_BYTES / model.GIB - used_gib - model.GPU_MEM_RESERVED_BYTES / model.GIB


def serving_oom(gpu: int, used_gib: float) -> str:
    free = _free_gib(used_gib)
    return serving_exception(
        f'  File "{SG}/model_executor/model_runner.py", line 2301, in forward\n'
        "    output = self._forward_raw(\n"
        "             ^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/layers/moe/fused_moe_triton/layer.py", line 988, in forward\n'
        "    combine_input = self.run_moe_core(dispatch_output)\n"
        "                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        + torch_oom(gpu, 2.0, max(free, 0.01) / 2, used_gib, used_gib - 3.4)
    )


def decode_oom_error(tokens: int, usage: float) -> str:
    return (
        "Decode out of memory. Try to lower your batch size.\n"
        f"Try to allocate {tokens} tokens.\n"
        f"Available tokens: 0\n"
        f"full_token_usage={usage:.2f}, swa_token_usage=0.00, "
    )


def decode_oom_exception(tokens: int, usage: float) -> str:
    return (
        _SCHED_HEAD + _SERVE_FRAMES.split(f'  File "{SG}/managers/scheduler.py", line 3021')[0]
        + f'  File "{SG}/managers/scheduler.py", line 2650, in get_next_batch_to_run\n'
        "    self.running_batch = self.update_running_batch(self.running_batch)\n"
        "                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/mem_cache/allocation.py", line 613, in alloc_for_decode\n'
        "    raise RuntimeError(error_msg)\n"
        "RuntimeError: " + decode_oom_error(tokens, usage)
    )


def serving_assertion() -> str:
    return serving_exception(
        f'  File "{SG}/model_executor/model_runner.py", line 2287, in forward\n'
        "    self.forward_batch_preprocess(forward_batch)\n"
        f'  File "{SG}/managers/schedule_batch.py", line 2044, in prepare_for_decode\n'
        "    assert len(self.out_cache_loc) == bs\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "AssertionError"
    )


def symm_mem_keyerror() -> str:
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 742, in init_torch_distributed\n'
        "    initialize_model_parallel(\n"
        f'  File "{SG}/distributed/parallel_state.py", line 1690, in initialize_model_parallel\n'
        "    _TP = init_model_parallel_group(\n"
        "          ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/distributed/parallel_state.py", line 1488, in init_model_parallel_group\n'
        "    return GroupCoordinator(\n"
        "           ^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/distributed/parallel_state.py", line 420, in __init__\n'
        "    self.torch_symm_mem_comm = TorchSymmMemCommunicator(\n"
        "                               ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/distributed/device_communicators/torch_symm_mem.py", line 87, in __init__\n'
        "    not in TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]\n"
        "           ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"KeyError: {model.GPU_SM_MAJOR}"
    )


def flashinfer_jit() -> str:
    msg = "No supported CUDA architectures found for major versions [9, 10]."
    return (
        _SCHED_HEAD + _INIT_FRAMES + _CAPTURE_FRAMES.replace("    raise Exception(\n", "    self._capture_one(bs)\n")
        + f'  File "{SG}/layers/flashinfer_comm_fusion.py", line 161, in ensure_workspace_initialized\n'
        "    _workspace_manager.initialize(\n"
        f'  File "{SITE}/flashinfer/comm/trtllm_ar.py", line 90, in get_trtllm_comm_module\n'
        "    module = gen_trtllm_comm_module().build_and_load()\n"
        "             ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SITE}/flashinfer/jit/comm.py", line 60, in gen_trtllm_comm_module\n'
        "    nvcc_flags = current_compilation_context.get_nvcc_flags_list(\n"
        "                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SITE}/flashinfer/compilation_context.py", line 68, in get_nvcc_flags_list\n'
        "    raise RuntimeError(\n"
        f"RuntimeError: {msg}\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        f'  File "{SG}/managers/scheduler.py", line 6368, in run_scheduler_process\n'
        + _INIT_FRAMES + _CAPTURE_FRAMES
        + f"Exception: Capture cuda graph failed: {msg}\n" + _CAPTURE_TAIL
    )


def capture_failed(inner_exc_line: str, inner_msg: str) -> str:
    return (
        _SCHED_HEAD + _INIT_FRAMES + _CAPTURE_FRAMES.replace("    raise Exception(\n", "    self._capture_one(bs)\n")
        + inner_exc_line + "\n\nDuring handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        f'  File "{SG}/managers/scheduler.py", line 6368, in run_scheduler_process\n'
        + _INIT_FRAMES + _CAPTURE_FRAMES
        + f"Exception: Capture cuda graph failed: {inner_msg}\n" + _CAPTURE_TAIL
    )


def nccl_invalid_usage() -> str:
    inner = "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)"
    return capture_failed(
        f'  File "{SG}/distributed/device_communicators/pynccl_wrapper.py", line 394, in NCCL_CHECK\n'
        "    raise RuntimeError(f\"NCCL error: {error_str}\")\n"
        f"RuntimeError: {inner}", inner)


def nccl_warn_line(host: str, pid: int, rank: int) -> str:
    return (f"{host}:{pid}:{pid} [{rank}] NCCL WARN Error : no algorithm/protocol available for function "
            "AllReduce with datatype ncclBfloat16. NCCL_ALGO was set to Tree.\n")


def ep_assertion() -> str:
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 641, in initialize\n'
        "    self.init_device_graphs()\n"
        f'  File "{SG}/layers/moe/token_dispatcher/flashinfer.py", line 212, in __init__\n'
        "    assert self.num_max_dispatch_tokens_per_rank * self.ep_size <= self.workspace_tokens\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "AssertionError"
    )


def ep_oom(gpu: int, used_gib: float) -> str:
    free = _free_gib(used_gib)
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 641, in initialize\n'
        "    self.init_device_graphs()\n"
        f'  File "{SG}/layers/moe/token_dispatcher/flashinfer.py", line 198, in __init__\n'
        "    self.workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=self.device)\n"
        "                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        + torch_oom(gpu, 24.0, max(free, 0.01), used_gib, used_gib - 1.2)
    )


def load_oom(gpu: int, used_gib: float) -> str:
    free = _free_gib(used_gib)
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 1320, in load_model\n'
        "    self.model = self.loader.load_model(\n"
        "                 ^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/model_loader/loader.py", line 702, in load_model\n'
        "    model = _initialize_model(\n"
        "            ^^^^^^^^^^^^^^^^^^\n"
        + torch_oom(gpu, 3.5, max(free, 0.01), used_gib, used_gib - 1.1)
    )


def kv_not_enough(mem_fraction: float) -> str:
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 652, in initialize\n'
        "    self.init_memory_pool(min_per_gpu_memory)\n"
        f'  File "{SG}/model_executor/pool_configurator.py", line 96, in configure\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        f"Current value: mem_fraction_static={mem_fraction}"
    )


def graph_oom(gpu: int, used_gib: float) -> str:
    free = _free_gib(used_gib)
    line = torch_oom(gpu, 1.5, max(free, 0.01), used_gib, used_gib - 2.0)
    return capture_failed(line, line.split(": ", 1)[1])


def invalid_device() -> str:
    return (
        _SCHED_HEAD + _INIT_FRAMES
        + f'  File "{SG}/model_executor/model_runner.py", line 701, in init_torch_distributed\n'
        "    torch.get_device_module(self.device).set_device(self.gpu_id)\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )


def spec_args_assert() -> str:
    """Uncaught in the launcher process itself (before any scheduler starts): exit code 1."""
    return (
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '  File "<frozen runpy>", line 88, in _run_code\n'
        f'  File "{SITE}/sglang/launch_server.py", line 32, in <module>\n'
        "    server_args = prepare_server_args(sys.argv[1:])\n"
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{SG}/arg_groups/speculative_hook.py", line 1161, in _handle_speculative_decoding\n'
        "    assert (\n"
        "AssertionError\n"
    )


def nccl_watchdog_lines(rank: int, seq: int, timeout_ms: int, pid: int) -> str:
    t = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1e6) % 1_000_000:06d}000"
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={model.HIDDEN}, NumelOut={model.HIDDEN}, "
            f"Timeout(ms)={timeout_ms}) ran for {timeout_ms + 76} milliseconds before timing out.")
    return (
        f"[rank{rank}]:[E{stamp} {pid} ProcessGroupNCCL.cpp:688] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: {work}\n"
        f"[rank{rank}]:[E{stamp} {pid} ProcessGroupNCCL.cpp:2214] [PG ID 2 PG GUID 3(tp) Rank {rank}] Process "
        f"group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught collective operation "
        f"timeout: {work}\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        f"  what():  [PG ID 2 PG GUID 3(tp) Rank {rank}] Process group watchdog thread terminated with exception: "
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work}\n"
    )
