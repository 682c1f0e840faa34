"""The last-resort layer: the marks of a failure wherever an unknown prefix put them, and what
makes such a line harmless (tuiapp/logwatch/last_resort.py)."""

from __future__ import annotations

import pytest
from logwatch_helpers import scan_text

from tuiapp.logwatch.last_resort import last_resort, line_mark, separate_marks

# prefixes no envelope knows (a job runner's tag and time, a viewer's line number, a relay's tag)
_PREFIXES = ["", "[80746] ", "job-7f3a | 12:00:01 | ", "(train_rft pid=2657296) 2024-05-11 14:10:52.227 "]


@pytest.mark.parametrize("prefix", _PREFIXES)
@pytest.mark.parametrize(("line", "kind"), [
    ("torch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers.", "error"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 126978", "error"),
    ("ERROR 06-22 20:16:34 async_llm_engine.py:52] Engine background task failed", "error"),
    ("misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument", "error"),
    ("NCCL failure all_reduce.cu:95 'unhandled cuda error'", "error"),
    ("UR backend failed. UR backend returns:40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)", "error"),
    ("Segmentation fault (core dumped) python -m sglang.launch_server", "crash"),
    ("worker process exited with code 137", "crash"),
    ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE)", "error"),
    ("16:53:24 - ❌ Crashed container in pod: vllm-standalone", "error"),
    ("Pod Running - {\"error\":{\"code\":500,\"message\":\"invalid character\"}}", "error"),
    # marks whatever the level: an RDMA completion error, a leak a check found, a 500 answered
    ("[WARN host 1711891 1711891 pollOnce rdma/ib_data_channel_impl.cc:203] pollOnce - channel_id: 4, CQE error, "
     "wr_id=19395, status=10 (remote access error)", "error"),
    ("/x/scheduler.py:1326: UserWarning: token_to_kv_pool_allocator memory leak detected! available_size=961586",
     "error"),
    ("2023-07-20 17:06:22.164 12 root INFO [timing():49] predict 0.0017, ['http_status:500', 'http_method:POST']",
     "error"),
    ("kernel: 000000000ee779df: ffffffffc0b44945 (_nv013207rm+0x2c5/0x5b0 [nvidia])", "error"),
    # a relay's level for a child's stream says nothing: the child's line is judged
    ("2024-02-15 16:04:21 | INFO | stdout | router init state: Traceback (most recent call last):", "error"),
    # a death a supervisor reports at a warning level; a link that is down; the kernel's warning banner
    ("2022-11-02 02:42:14,808 WARNING worker.py:1849 -- Raylet is terminated: ip=172.29.58.133. Termination is "
     "unexpected.", "crash"),
    ("link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING",
     "error"),
    ("[53902.557426] ------------[ cut here ]------------", "error"),
    ("[PID: 749] 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out.", "error"),
    ("Unhandled exception caught in c10/util/AbortHandler.h", "crash"),
    ("[2022-04-12 13:46:39,948 C 74 74] (raylet) node_manager.cc:170: This node has beem marked as dead.", "error"),
    ("[  131.479939] internet: link status down for interface eno4, disabling it in 200 ms", "error"),
    ("08-04 06:43:55 Xid 31 GPC1 GPCCLIENT_T1_9  @ 0xede3_7fa00000  FAULT_PDE ACCESS_TYPE_VIRT_READ", "error"),
    ("syslog:err   : 2025-05-27T04:18:56,089671+00:00 NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus",
     "error"),
    # out of memory on any device, and the kernel's OOM killer (advice does not silence it: torch's says "try")
    ("【BUG】：RuntimeError: NPU out of memory. Tried to allocate 3.47 GiB. If reserved memory is >> allocated "
     "memory try setting max_split_size_mb", "oom"),
    ("kernel: [  518.050606] Out of memory: Killed process 15784 (python3) total-vm:11964kB", "oom"),
    # a server error as an error object's code, or at the end of an access line
    ('got exception: {"code":500,"message":"image input is not supported","type":"server_error"}', "error"),
    ("srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 503", "error"),
    # a C++ backtrace's numbered frame
    ("5       0x7f16747a1d02 tensorrt_llm::batch_manager::RuntimeBuffers::prepareStep(std::vector<int> const&) + 194",
     "error"),
    # lines run together: a frame's quotes are no quoted text
    ('/x/module.py", line 1747, in _call_impl (Worker pid=2) ERROR 07-03 19:33:28 [utils.py:238] return f(x) '
     '(Worker pid=2) ERROR 07-03 19:33:28 [utils.py:238] File "/x/qwen.py", line 84, in forward', "error"),
    ('lib/x/qwen2_5_vl.py", line 213, in gather (Worker pid=2) ERROR 07-03 19:33:28 [utils.py:238] '
     "RuntimeError: NPU out of memory.", "oom"),
    # glibc's backtrace frames (Open MPI, UCX), UCX's crash banner, a limit a step ran into, a corruption
    ("[40a8c9673b05:1447852] [13] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]", "error"),
    ("==== backtrace (tid:2330856) ====", "crash"),
    ("ib_mlx5_log.c:177  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)", "error"),
    ("ncclsocket_socket.cpp:socketStartConnect:488: socketStartConnect: exceeded timeouts (3)", "error"),
    ("Context corruption detected: Request 3b5d received metadata from bootstrap_room=4125156593077881415.", "error"),
    # a timeout that happened; Slurm's record of a failed job; a status field without its '='
    ("DeepEP dispatch forwarder timeout (RDMA meta), channel: 4, RDMA: 0, nvl: 7, src RDMA lane: 1", "error"),
    ("   **JobState=FAILED Reason=NonZeroExitCode** Dependency=(null)", "crash"),
    ("0.51.940.248 I srv  log_server_response: rid  | GET /v1/models 127.0.0.1:42298 | status 503 | cost 6.24s", "error"),
    # sacct's row of a step that ran out of memory; an assertion macro of C code; UCX's banner, padded
    ("[JOBID].0    python3.12               default          1 OUT_OF_ME+    0:125", "crash"),
    ("................GGML_ASSERT: D:/a/ggml-cuda.cu:5925: false", "assertion"),
    ("==== backtrace (tid:  31212) ====", "crash"),
    # a supervisor's record of a child that died, at its INFO level
    ("2012-03-08 12:06:36,177 INFO exited: webserver (exit status 1; not expected)", "crash"),
    # the operating system refusing a step, whatever level the program filed it at
    ("* `LMCache WARNING: Remote connection failed in contains: [Errno 32] Broken pipe`", "error"),
    ("libfabric:22102:1638393161:verbs:ep_ctrl:vrb_ep_enable():884<warn> rdma_create_qp: Cannot allocate memory (12)",
     "error"),
    # a result table's Fail, a daemon's HTTP code, glog with the year in its date
    ("|                           | Fail - GPU: 0                                  |", "error"),
    ("(HTTP code 500) server error - failed to create task for container: failed to create shim task", "error"),
    ("   `E20260821 12:30:19.448818 rdma_transport.cpp:827] RdmaTransport: No available RNIC`  ", "error"),
    # a Kubernetes event of type Warning that something failed
    ("  Warning  FailedScheduling   10h   default-scheduler   0/6 nodes are available: 6 Insufficient nvidia.com/gpu.",
     "error"),
    # the IOMMU or a GPU's memory hub refusing a device's access
    ("> [ 7460.483919] nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x001c address=0xd0826240]",
     "error"),
    ("drmn0: [mmhub] VMC page fault (src_id:0 ring:153 vm_id:0 pas_id:0)", "error"),
    ("DMAR: [DMA Read NO_PASID] Request device [0000:17:00.0] fault addr 0x7f000000 [fault reason 0x06]", "error"),
    # torch elastic tearing its workers down at WARNING; the kernel's OOM killer invoked
    ("> WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 484376 closing signal SIGTERM", "error"),
    ("[195998.443208] node invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=991", "oom"),
    ("Aug 18 03:19:11 169 kernel: Killed process 7748 (python) total-vm:12907828kB, anon-rss:11500204kB", "oom"),
])
def test_a_mark_is_found_behind_any_prefix(prefix: str, line: str, kind: str) -> None:
    assert line_mark(prefix + line) is not None
    assert line_mark(prefix + line)[0] == kind


@pytest.mark.parametrize("line", [
    # a lower level governs what follows it
    "2025-01-01 10:00:00 INFO: health check is pending with error: connection refused",
    "[W516 12:46:57.499514954 ProcessGroupNCCL.cpp:1826] Failed to check the \"should dump\" flag on TCPStore",
    "I 08-21 14:52:10 job_lib.py:584] Updated job 6 status to JobStatus.FAILED",
    "warning: could not find '.gnu_debugaltlink' file for /lib/x86_64-linux-gnu/liblber.so.2",
    # a relay filing a child's INFO line, or nothing, under ERROR
    "2024-04-18 15:16:58 | ERROR | stderr | INFO:     Started server process [355692]",
    "2024-04-18 15:16:57 | ERROR | stderr |",
    # quoted, echoed, advice, counts of nothing, a person's sentence
    "[2026-01-01 12:00:00] Receive: obj=GenerateReqInput(text='Error: panic: CUDA error: out of memory')",
    "Setup Custom allreduce failed with CUDART error: peer access is not supported. To silence this warning, do X",
    "Successful requests: 100, Failed requests: 0",
    "Total errors: 0",
    "Hi, with the latest image I got this error :",
    "job-7f3a | 12:00:01 | retrying request after 1 failed attempt",
    # TensorFlow's E lines on every import, a Python warning class, an interrupt
    "2025-11-14 12:47:54.577428: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register "
    "cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
    "[80746] UserWarning: TypedStorage is deprecated",
    "[80746] KeyboardInterrupt: ",
    # a logger's name, PyTorch's collect_env, an access log that answered
    "2023-07-20 15:35:42.578 12 uvicorn.error INFO [serve():84] Started server process [12]",
    "Clang version: Could not collect",
    "Failed requests:                         0          <<<<<<< New line",
    "The mem_fraction_static is too large for this GPU; out of memory errors are likely. Try --mem-fraction-static=0.7.",
    # a Python warning, whatever its text says; docker about to pull; an unsigned kernel module
    "/x/torchair/configs/compiler_config.py:74: UserWarning: The following config may not take effect or report error",
    "Unable to find image 'ghcr.io/huggingface/text-generation-inference:2.0.4' locally",
    "[53440.605199] knem: module verification failed: signature and/or required key missing - tainting kernel",
    "All six faults on this host, from `/var/log/kern.log`. **Every one is `Xid 31` (MMU fault).**",
    "[2022-04-12 09:34:52,472 W 74 97] (raylet) metric_exporter.cc:206: Export metrics to agent failed: GrpcUnknown",
    'INFO:     127.0.0.1:40000 - "POST /generate HTTP/1.1" 200 OK',
    "[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171. Error: /bin/dash: 1: py-spy: not found",
    'srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200',
    '{"code":200,"message":"ok"}',
    "    0x7f16747a1d02 is the address the debugger was asked about",
    # captions above a paste, a person's sentence about it; a backtrace frame without a symbol
    "Error Message", "**Error logs:**", "Crash report", "it throws an error ",
    "41      0x79bed11c21ca /usr/lib/x86_64-linux-gnu/libc.so.6(+0x2a1ca) [0x79bed11c21ca]",
    # a timeout as a setting, a job that completed
    "python -m sglang.launch_server --timeout 600", "timeout=30", "the timeout is 30 s", "set a timeout of 10 s",
    "   JobState=COMPLETED Reason=None Dependency=(null)",
    "12345.0    python  debug  default  1  COMPLETED  0:0", "#define GGML_ASSERT(x) do {} while (0)",
    "2012-03-08 12:06:36,177 INFO exited: webserver (exit status 0; expected)",
    # a WARN of what a setting "can lead to" is advice; page faults a program counts
    'host:402:402 [0] src/init.cc:179 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to hang!',
    "   1,204      page faults              #    0.002 M/sec",
    "Sending process 484376 closing signal SIGINT",  # (Ctrl-C: the user stopped it)
    # a count of nothing with its noun; a tool's bare "Warning: " behind its own prefix
    "100% tests passed, 0 tests failed out of 12",
    "[01/23/2016 13:52:06][jiaxin-wu][0]:Warning: Getting serial number failed",
])
def test_a_harmless_line_has_no_mark(line: str) -> None:
    assert line_mark(line) is None


def test_the_strongest_mark_of_a_record_is_its_decisive_line() -> None:
    body = ["Hi, with the latest image I got this error :", "",
            "UR backend failed. UR backend returns:40 (UR_RESULT_ERROR_OUT_OF_RESOURCES) at ggml-sycl.cpp"]
    assert last_resort(body) == ("error", 2)


def test_frames_behind_any_prefix_are_a_traceback_and_its_exception_line_decides() -> None:
    tag = "2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess: "
    body = [tag + '  File "/opt/x/engine.py", line 58, in run', tag + "    raise e",
            tag + '  File "/opt/x/engine.py", line 24, in start', tag + "    return cls(",
            tag + "RuntimeError: engine died"]
    assert last_resort(body) == ("error", 4)
    assert last_resort(body[:4]) == ("error", 2)  # cut before its exception line: the last frame
    assert last_resort(body[:4] + [tag + "KeyboardInterrupt"]) is None


def test_a_process_that_gave_up_is_a_failure_and_one_that_was_stopped_is_not() -> None:
    frames = ['  File "/x/request.py", line 175, in get', "    exit(1)",
              '  File "/x/_sitebuiltins.py", line 26, in __call__', "    raise SystemExit(code)"]
    assert last_resort([*frames, "SystemExit: 1"]) == ("error", 4)
    assert last_resort([*frames, "SystemExit: bad config"]) == ("error", 4)
    assert last_resort([*frames, "SystemExit: 0"]) is None
    assert last_resort([*frames, "SystemExit"]) is None
    assert last_resort([*frames, "asyncio.exceptions.CancelledError"]) is None


def test_a_frame_behind_an_editors_line_numbers_is_read_with_its_source() -> None:
    body = ["commit a574770: there is illegal bug when run DeepSeek:",
            '409   File "/x/scheduler.py", line 1218, in run_batch',
            "410     ) = self.draft_worker.forward_batch_speculative_generation(batch)"]
    assert last_resort(body) == ("error", 1)


def test_one_frame_with_its_source_or_ipythons_arrows_are_a_traceback() -> None:
    frame = ['    super().__init__(', '  File "/x/linear.py", line 281, in __init__', '    super().__init__(']
    assert last_resort(frame) == ("error", 1)
    assert last_resort(frame[1:2]) is None  # a frame alone, with nothing around it: no traceback yet
    assert last_resort(['  File "/x/a.py", line 2, in f', "note: see the docs"]) is None
    notebook = ["[/x/vllm/utils.py](https://localhost:8080/#) in inner(*args, **kwargs)",
                "-> 1161             return fn(*args, **kwargs)", "",
                "[/x/vllm/llm.py](https://localhost:8080/#) in __init__(self, model)",
                "--> 247         self.llm_engine = LLMEngine.from_engine_args("]
    assert last_resort(notebook) == ("error", 4)
    assert last_resort([*notebook, "KeyboardInterrupt: "]) is None  # a cell the user stopped


def test_an_unknown_format_reaches_the_watcher_as_one_incident_with_its_line() -> None:
    text = ("$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4\n"
            "NCCL failure common.cu:908 'unhandled cuda error'.\n")
    (inc,) = scan_text(text)
    assert inc["signature_line"] == 2 and "unhandled cuda error" in inc["message"]


def test_a_go_goroutine_dump_is_a_death_also_in_a_localised_journal() -> None:
    text = "".join(f"mar 15 11:39:07 acquario3 ollama[87551]: {a}\n" for a in (
        "net.(*netFD).Read(0xc000619900, {0xc00035f000?, 0xc00029fad0?})",
        "        net/fd_posix.go:55 +0x25 fp=0xc00029faa8 sp=0xc00029fa60 pc=0x64c824a077a5",
        "net.(*conn).Read(0xc000232720, {0xc00035f000?, 0x0?, 0x0?})",
        "        net/net.go:194 +0x45 fp=0xc00029faf0 sp=0xc00029faa8 pc=0x64c824a15b65"))
    assert [i["kind"] for i in scan_text(text)] == ["crash"]


def test_glog_without_a_thread_id_and_tensorflow_e_lines_are_errors() -> None:
    assert [i["kind"] for i in scan_text(
        "E0713 23:29:03.494601 nixl_agent.cpp:631] prepXferDlist: failed to prepare the descriptors\n")] == ["error"]
    assert [i["kind"] for i in scan_text(
        "2020-05-04 09:05:40.719343: E    1578 tensorflow/compiler/xla/xla_client/xla_util.cc:76] StackTrace:\n")] \
        == ["error"]


def test_a_capture_failure_is_an_oom_unless_its_cause_says_otherwise() -> None:
    kinds = [i["kind"] for i in scan_text(
        "Exception: Capture cuda graph failed: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during "
        "CUDA graph capture.\n")]
    assert kinds == ["error"]
    assert [i["kind"] for i in scan_text(
        "Exception: Capture cuda graph failed: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")] == ["oom"]


def test_the_hip_runtimes_trace_of_its_own_calls_is_no_failure() -> None:
    # AMD_LOG_LEVEL=3: the file is hip_error.cpp and the call hipGetLastError, and nothing failed
    assert scan_text(":3:hip_error.cpp            :27  : 0893897962 us: [pid:110   tid:0x7f5f]  hipGetLastError (  ) \n"
                     ":3:hip_module.cpp           :679 : 0893897958 us: [pid:110   tid:0x7f5f] hipLaunchKernel: "
                     "Returned hipSuccess : \n") == []


def test_a_paste_quoted_as_a_whole_is_read() -> None:
    assert line_mark('"srun: error: c002: task 0: Killed') == ("crash", 5)
    assert line_mark("[x] Receive: text='srun: error: c002: task 0: Killed'") is None


def test_a_paste_holding_several_failures_gives_each_its_own_incident_at_its_line() -> None:
    text = ("Resolving following warnings and errors:\n"
            "- [x] `srun: error: Unable to create step for job 77: Invalid generic resource (gres) specification`\n"
            "   - added option for number of nodes\n"
            "- [ ] `srun: error: Unable to create step for job 78: Invalid partition name specified`\n"
            "- [ ] `srun: error: Unable to create step for job 79: Invalid partition name specified`\n")
    got = scan_text(text)
    assert [(i["first_line"], i["signature_line"]) for i in got] == [(2, 2), (4, 4)]  # (the third repeats the second)
    # a failure word alone does not stand apart (a person's sentence has them); a traceback is one failure
    assert len(scan_text("When loading big models, the backend crashes:\n"
                         "level_zero backend failed with error: 20 [UR_RESULT_ERROR_DEVICE_LOST]\n")) == 1
    tb = ('  File "/x/a.py", line 3, in f\n    g()\n  File "/x/b.py", line 9, in g\n    raise X\n'
          "ERROR: first\nERROR: second thing\n")
    assert len(scan_text(tb)) == 1


def test_dmesg_lines_are_records_of_their_own() -> None:
    text = ("[ 2399.645506] amdgpu: amdgpu_amdkfd_restore_userptr_worker: Failed to resume KFD\n"
            "[ 2400.100000] rfkill: input handler enabled\n"
            "[ 2480.727732] amdgpu 0000:0e:00.0: amdgpu: ring comp_1.1.0 timeout, signaled seq=7, emitted seq=9\n")
    got = scan_text(text)
    assert got and got[0]["first_line"] == 1  # not the record of all three, read at its strongest line


def test_a_log_glued_to_its_code_fence_and_xids_behind_a_bare_time_are_read() -> None:
    (inc,) = scan_text("```53.26.801.941 E CUDA error: an illegal memory access was encountered\n")
    assert inc["message"].endswith("an illegal memory access was encountered")
    assert scan_text("```Shell\n```\n") == []
    got = scan_text("19:14:43  NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception: ESR 0x57e7b0=0x81e0017\n"
                    "19:15:34  NVRM: Xid (PCI:0000:9a:00): 31, pid=477445, name=python3, channel 0x00000002\n"
                    "          MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x182400_0030198d.\n")
    assert [(i["kind"], i["first_line"]) for i in got] == [("xid", 1), ("xid", 2)]


def test_a_long_record_whose_decisive_line_is_past_the_lines_read_for_others() -> None:
    # (the generic layer may decide on a line past the first 64 the last resort looks at)
    body = ["ERROR: first thing went wrong", *[f"detail {i}" for i in range(70)], "ERROR: second thing went wrong"]
    assert separate_marks(body, len(body) - 1) == [0]
    got = scan_text("\n".join(body) + "\n")
    assert got


def test_nccls_advice_about_a_kernel_parameter_is_no_failure_but_its_next_warn_is() -> None:
    advice = 'host:402:402 [0] src/init.cc:179 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to hang!\n'
    assert scan_text(advice) == []
    failed = advice + "host:402:436 [1] src/transport/p2p.cc:220 NCCL WARN hipIpcGetMemHandle failed : invalid argument\n"
    assert [(i["kind"], i["signature_line"]) for i in scan_text(failed)] == [("nccl", 2)]


def test_dmesg_lines_minutes_apart_are_two_incidents_and_a_reset_that_succeeded_is_none() -> None:
    ring = "[73328.541814] amdgpu 0000:c5:00.0: amdgpu: ring comp_1.2.1 timeout, signaled seq=7, emitted seq=9\n"
    ok = "[73328.543914] amdgpu 0000:c5:00.0: amdgpu: GPU reset(2) succeeded!\n"
    mes = "[{t}] amdgpu 0000:c5:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE\n"
    assert scan_text(ok) == []
    # the kernel's clock says 491 s: two failures, however few lines apart
    assert [i["first_line"] for i in scan_text(ring + ok + mes.format(t="73819.930091"))] == [1, 3]
    # in the same second they are one burst
    assert [i["first_line"] for i in scan_text(ring + ok + mes.format(t="73328.930091"))] == [1]
