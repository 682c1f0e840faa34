"""The generic layer under the family rules: a record no family knows is still a failure
when a careful operator would call it one.

Each pattern is anchored at the start of a candidate line (classify.py: the record's first
message and its unindented lines, collector envelopes and SGLang's prefix already gone), so
words in the middle of a message (a logged prompt, advice in a warning, an INFO line that
says "error") never match. What counts:

- a level the process printed itself: ERROR / FATAL / CRITICAL in the formats logging
  libraries write (Python's default and ``%(asctime)s - name - LEVEL - ...`` formats,
  loguru, ``[LEVEL]``, Rust ``tracing`` as the router/gateway prints it, logfmt
  ``level=error``, glog/c10 ``E``/``F`` lines, JSON records);
- a panic or abort of a native process (Rust, Go, glog, absl, the shell's core dump);
- a hardware fault report of any accelerator vendor SGLang runs on (NVIDIA, AMD ROCm,
  Intel GPUs, Ascend NPUs) and device-side or C assertions;
- a line that starts ``Error:`` / ``FATAL:``.

Deaths (an abort, a core dump, a fatal signal) are ``crash``; the rest ``error``.
"""

from __future__ import annotations

import re

from tuiapp.logwatch.caption import is_caption

# a timestamp as loggers write it (ISO, with or without date, comma or dot fraction)
_TS = (r"\[?(?:\d{4}[-/]\d\d[-/]\d\d[T ]|\d{4}-[A-Z][a-z]{2}-\d\d |\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d+)?"
       r"(?:Z|[+-]\d\d:?\d\d)?(?: [A-Z]{3})?\]?")
_LVL = r"(?:ERROR|FATAL|CRITICAL|CRIT|EMERG|ALERT|Error|Fatal|Critical)"
_LEVEL_RE = (
    # "ERROR:root:msg", uvicorn "ERROR:    msg"
    r"(?:ERROR|CRITICAL|FATAL):(?:[\w.]*:|\s+)\S"
    # "[ERROR] msg", "[ts] [ERROR] msg", "[ts][ERROR]", Ascend "[ERROR] RUNTIME(123,python):...",
    # "[91169.521125] [ERROR]msg" (any bracketed stamp before it)
    r"|(?:" + _TS + r"\s*|\[[^\]]{1,40}\]\s*)?\[" + _LVL + r"\]"
    # "[1784273406.68] [host:pid:tid]  file.c:452  UCX  ERROR  msg": bracketed fields, a source
    # location and a component before the level
    r"|(?:\[[^\]]{1,80}\]\s*){1,3}(?:[\w./-]+:\d+\s+)?(?:[A-Za-z]\w*\s+)?(?:ERROR|FATAL)\b"
    # Python's own failure headers (threading, socketserver, asyncio, the interpreter)
    r"|Exception (?:in thread \S|occurred during processing of request|in callback\b)"
    r"|(?:Task|Future) exception was never retrieved|Error in sys\.excepthook"
    # "<ts> - name - ERROR - msg", "<ts> | ERROR | msg" (loguru), "<ts> ERROR target: msg" (tracing),
    # "[Router (Python)] <ts> - ERROR - msg", "ERROR 05-15 18:58:58 [engine.py:448] msg" (vLLM's
    # format), "- name - ERROR -" once a collector took the time off
    r"|(?:\[[^\]]{1,40}\] )?(?:" + _TS + r"\s*(?:\d+:\d+\s+)?(?:[-|]\s*)?(?:[\w.:<>/\[\]()-]{1,80}\s+[-|]\s+)?"
    r"|[-|] (?:[\w.:<>/-]{1,80} [-|] )?)?" + _LVL + r"(?:\s+[-|:]?|:)\s*\S"
    # "[ts] [error] [pid] [file.cpp:N] msg" (lower case, in brackets), also after more bracketed fields
    # ("[19:08:34.164951][GC      ][error][tid:44F8A] msg": Intel Gaudi's Synapse)
    r"|(?:" + _TS + r"\s*)?\[(?:error|fatal|critical)\] "
    r"|(?:\[[^\]]{1,40}\]\s*){1,3}\[(?:error|fatal|critical)\]"
    # tracing once the timestamp went with the envelope: "ERROR sglang_router_rs::x: msg"
    r"|(?:ERROR|FATAL) +[\w:]+(?:[\w:]*::\w+)?: "
    # glog "E0904 12:00:00.123  1234 file.cc:12] msg" (F = fatal; newer ones put the year in: "E20260821");
    # the same with a space after the level and no pid ("E 08-31 21:02:44 subprocess_utils.py:84] msg": SkyPilot)
    r"|[EF](?:\d{4}|\d{8}) \d\d:\d\d:\d\d\.\d+ +(?:\d+ +)?[\w./-]+:\d+\] "
    r"|[EF] \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [\w./-]+:\d+\] "
    # logrus's text format (the docker CLI, containerd, Go tools): "ERRO[0000] msg", "FATA[2024-...] msg"
    r"|(?:ERRO|FATA|PANI)\[[^\]]{1,40}\] +\S"
    # TensorFlow/XLA's dated absl lines ("2022-04-04 00:27:49.642380: E tensorflow/.../x.cc:88] msg", with or
    # without the thread id) at F or E, except the E lines TF prints on every import: registering its CUDA
    # plugins' factories a second time ("Unable to register cuDNN factory: ... already been registered")
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [EF] +(?:\d+ +)?[\w./-]+:\d+\] (?!.*(?:Unable to register \w+ factory"
    r"|already been registered))\s*\S"
)
_PANIC_RE = (
    r"thread '[^']*' panicked at\b"  # Rust (the router/gateway)
    r"|panic: \S"  # Go
    r"|fatal error: \S"  # Go runtime, a compiler's fatal error
    r"|\*\*\* (?:SIG[A-Z]+ received|Aborted at \d|Check failure)"  # absl / glog failure handlers
    r"|Check failed: "
    r"|Abort was called at \d+ line in file:"  # Intel compute runtime
    # systemctl on a unit that did not start: "Job for x.service failed because the control process
    # exited with error code." (or "... because a timeout was exceeded."): an error, the unit never ran
    r"|Job for \S+ failed because\b"
    r"|(?:Error|ERROR|FATAL|Fatal error|FATAL ERROR)(?: \w+)?[:!] +\S"
)
# the NVIDIA driver's own failure reports that carry no Xid (the GPU gone from the bus, its
# firmware (GSP) not answering, the probe failing, the driver's assertions)
NVRM_FAILURE = (r"(?:.*\bfallen off the bus|.*\bprobe routine failed|.*RmInitAdapter failed|.*uncorrectable ECC"
                r"|.*rpcSendMessage failed|.*GspRmFree failed|.*nvAssertFailed|.*GPU has fallen|.*GPU lost)")
_DEVICE_RE = (
    # NVIDIA (Xids are a family of their own)
    r"(?:CUDA|cuda) (?:error|Error|ERROR)\b[: ]"
    r"|cudaError\w+\b"
    r"|CUBLAS_STATUS_(?!SUCCESS)\w+"
    r"|(?:\[[^\]]{1,40}\] )?(?:kernel: )?NVRM: " + NVRM_FAILURE +
    # AMD ROCm: the runtime's own reports (ROCr, ROCclr, HIP), amdgpu in dmesg
    r"|Memory access fault by GPU node-\d+"
    r"|:\d:\S+\.(?:cpp|hpp|h)\s*:\s*\d+\s*: \d+ us: .*(?:\b(?:aborting|[Ee]rror|failed)\b|HSA_STATUS_ERROR)"
    r"|HSA_STATUS_ERROR_\w+"
    r"|hipError\w+"
    r"|HIP (?:error|Error)\b[: ]"
    r"|(?:rocBLAS|hipBLASLt|MIOpen|RCCL) (?:error|Error)\b"
    # (a reset that "succeeded" is the end of the hang the driver reported as it began: that report is the
    # failure's line)
    r"|(?:\[[^\]]{1,40}\] )?(?:kernel: )?amdgpu [\w:.]+: .*(?:page fault|GPU reset(?!\(\d+\) succeeded| succeeded)"
    r"|GPU hang|ring \w+ timeout|GPU fault detected|VM_L2_PROTECTION_FAULT)"
    # Intel GPUs: Level Zero / UR / PI error codes, the kernel driver, the UMD's page fault
    r"|(?:UR_RESULT|ZE_RESULT|PI)_ERROR_\w+"
    r"|(?:\[[^\]]{1,40}\] )?(?:kernel: )?(?:i915|xe) [\w:.]+: \[drm\] .*(?:GPU HANG|[Rr]eset|hang)"
    # the RDMA NICs NCCL and the KV-transfer engines run over (InfiniBand/RoCE, AWS EFA): their
    # kernel drivers reporting a failed command, registration or a fatal error
    r"|(?:\[[^\]]{1,40}\] )?(?:kernel: )?(?:infiniband|mlx[45]_core|mlx5_ib|efa|bnxt_re|irdma) [\w:.-]+: "
    r".*(?:\b[Ff]ailed\b|\b[Ee]rror\b|\bFATAL\b|[Ff]atal error|timed out)"
    r"|Segmentation fault from GPU at 0x"
    # Ascend NPUs: CANN's error codes ("EZ9999: Inner Error!", "EE1001: ..."), torch_npu's ERRnnnnn
    r"|E[A-Z0-9]\d{4}: \S"
    r"|ERR\d{5} \S"
)
# deaths: the process is gone
_DEATH_RE = (
    # a native crash handler (UCX's ucs, backward-cpp and the like), Ray losing a worker,
    # a container runtime's events
    r"(?:\[[^\]]{1,80}\] )?Caught signal \d+ \("
    r"|[!*#= ]*(?:Segfault|Segmentation fault) encountered"
    r"|(?:\(raylet\) )?A worker died or was killed while executing"
    r"|The actor is dead because its worker process has died"
    r"|container (?:oom|die) [0-9a-f]{12,}"
    r"|(?:Aborted|Bus error|Floating point exception|Illegal instruction|Trace/breakpoint trap)"
    r"(?: \(core dumped\))?\s*$"
    r"|Fatal Python error: \S"
    r"|\*\*\* (?:SIG[A-Z]+ received|Aborted at \d)"
    # docker compose on a service whose process died: "comfyui-1 exited with code 139"
    r"|[\w.-]+ exited with code [1-9]\d*\s*$"
    # systemd on a unit's main (or start-up) process: "x.service: Main process exited, code=killed, status=9/KILL",
    # "x.service: Failed with result 'oom-kill'"
    r"|(?:[\w@.:-]+: )?(?:Main|Control) process exited, code=\w+, status=(?!0/)\S"
    r"|[\w@.:-]+: Failed with result '[\w-]+'"
    # systemd-coredump's report (journald): "Process 6071 (python3) of user 0 dumped core."
    r"|Process \d+ \([^)]*\) of user \d+ dumped core\b"
    # zsh on a job that died: "[1]    2964311 abort (core dumped)  python test.py"
    r"|\[\d+\] +\d+ (?:abort|segmentation fault|killed|bus error|floating point exception|illegal hardware instruction)"
    r"(?: \(core dumped\))? +\S"
    # ROCclr's guarantee(), which aborts the process: "/x/rocclr/hip_code_object.cpp:120: guarantee(false && \"...\")"
    r"|\S+\.(?:cpp|cc|hpp|h):\d+: guarantee\("
)

# fault reports specific enough to be found anywhere in a line (a runtime writes them into
# whatever the terminal shows, e.g. a tqdm bar; a library reports a failed HIP call after its
# own prefix: "[AITER] file.cpp:141 fail to call hipModuleLaunchKernel(...) ---> [HIP error](...)")
_ANYWHERE_RE = re.compile(r"Memory access fault by GPU node-\d+ \(Agent handle|HSA_STATUS_ERROR_\w+|"
                          r"NVRM: Xid |an illegal memory access was encountered|"
                          r"\[HIP error\]\(|\bfail(?:ed)? to call hip[A-Z]\w*\(")
_ANYWHERE_HINTS = ("Memory access", "HSA_STATUS", "illegal memory", "HIP error", "to call hip")
# a pod in a failed state, as `kubectl get pods` lists it: NAME READY STATUS RESTARTS AGE
_POD_ROW_RE = re.compile(r"\S+\s+\d+/\d+\s+(CrashLoopBackOff|OOMKilled|Error|ImagePullBackOff|ErrImagePull"
                         r"|CreateContainer(?:Config)?Error|RunContainerError)\s+\d+")
_POD_DEATHS = ("CrashLoopBackOff", "OOMKilled", "Error")
# Patterns that begin with any word: tried only when the line has what they need.
_ANY_WORD = (
    # "srun: error: ...", "slurmstepd: error: ...", "[ts] error: *** STEP ... CANCELLED ***"
    r"(?:[\w.-]+: |\[[^\]]{1,40}\] )(?:\w+ ){0,2}(?:error|fatal|ERROR|FATAL): \S"
    # an exception line whose message is empty ("...errors.ChildFailedError: " from torchrun)
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception):\s*$"
    r"|(?:[\w.-]+: )?\S+:\d+: [^:]+: Assertion [`'].+[`'] failed\.?\s*$"  # C assert(): "prog: file:N: f: ..."
    r"|\S+\.cu:\d+: [^\n]*Assertion [`'].+[`'] failed\."  # CUDA device-side assert
)
_ANY_WORD_RE = re.compile(_ANY_WORD)
# C tools and runtimes report a failed step as "component: failed to X: reason"
# ("ggml_cuda_init: failed to initialize CUDA: unknown error")
# (a shell run without a terminal says "bash: cannot set terminal process group (-1): ...": noise)
_FAILED_TO_RE = re.compile(r"(?!(?:ba|z|da|k)?sh: cannot set terminal process group)"
                           r"[\w.-]+: (?:[Ff]ailed to|[Uu]nable to|[Cc]annot|[Cc]ould not) [^:]{2,80}: \S")
_FAILED_TO_HINTS = (": failed to ", ": Failed to ", ": unable to ", ": Unable to ", ": cannot ", ": could not ")
# an exception reported by the repr of its type: "<class 'ModuleNotFoundError'>: No module named 'x'"
_CLASS_REPR_RE = re.compile(r"<class '(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)'>:? \S")
# Every other pattern begins with a symbol, a digit or one of these words: a line that starts
# otherwise (most of what a server prints) skips the big pattern.
_SYM_START = frozenset("[(-|{:*!<0123456789")
_WORD2 = frozenset({"Jo", "ER", "CR", "FA", "EM", "AL", "Er", "Fa", "Cr", "Ex", "Ta", "Fu", "th", "pa", "fa", "Ch", "Ab", "PA",
                    "CU", "cu", "NV", "ke", "Me", "HS", "hi", "HI", "ro", "MI", "RC", "am", "UR", "ZE", "PI", "i9",
                    "xe", "Se"})
GENERIC_ERROR_RE = re.compile(r"(?:" + _LEVEL_RE + "|" + _PANIC_RE + "|" + _DEVICE_RE + r")")
GENERIC_DEATH_RE = re.compile(_DEATH_RE)
_COMPOSE_EXIT_RE = re.compile(r"[\w.-]+ exited with code [1-9]\d*\s*$")
# a level named anywhere in a logfmt or JSON record
_LOGFMT_RE = re.compile(r'\blevel=(?:"?)(?:error|fatal|crit\w*|ERROR|FATAL|CRITICAL)\b')
_JSON_LEVEL_RE = re.compile(r'"(?:level|levelname|severity|lvl)"\s*:\s*"(?:error|fatal|critical|ERROR|FATAL|CRITICAL)"')
# a JSON record without a level that carries an error: an error body ('{"error":{"message":...}}'), a
# response that ended with a server error ('"status_code":500')
_JSON_ANY_LEVEL_RE = re.compile(r'"(?:level|levelname|severity|lvl)"\s*:')
_JSON_ERROR_RE = re.compile(r'"error"\s*:\s*(?:\{|"[^"])|"status_code"\s*:\s*5\d\d\b')

# Unprefixed lines that begin a record of their own (a native process writing to the same
# stream): tried only on lines that start with no space and are not SGLang's.
RECORD_START_RE = re.compile(
    r"(?:" + _TS + r"\s*(?:[-|]\s*)?(?:[\w.:<>/\[\]()-]{1,80}\s+[-|]\s+)?)?\[?"
    r"(?:INFO|WARN|WARNING|DEBUG|TRACE|NOTICE|ERROR|FATAL|CRITICAL)\]?(?:\s+[-|:]?|:)\s*\S"
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "
    r"|thread '[^']*' panicked at|panic: |\*\*\* (?:SIG[A-Z]+ received|Aborted at)"
    r"|Memory access fault by GPU|:\d:\S+\.(?:cpp|hpp|h)\s*:\s*\d+\s*: \d+ us: "
    r"|E[A-Z0-9]\d{4}: |Abort was called at|Segmentation fault from GPU"
    r"|(?:Aborted|Bus error|Floating point exception|Illegal instruction)(?: \(core dumped\))?\s*$"
)


# two-character starts of the death patterns; with _may_start, the lines worth a full look
_DEATH2 = frozenset({"Ab", "Bu", "Fl", "Il", "Tr", "Fa", "**", "!!", "##", "==", "(r", "A ", "Th", "co", "[3", "Pr", "Ma", "Jo"})


def might_fail(line: str) -> bool:
    """False for a line no generic pattern can match (most of what a server prints): the
    patterns are then not tried at all."""
    # (one chain of substring tests: a generator over hint tuples cost more than the tests)
    return (_may_start(line) or line[:2] in _DEATH2 or "core dumped" in line or "Assertion" in line
            or "rror: " in line or "RROR: " in line or "atal: " in line or "ATAL: " in line
            or line.endswith((":", ": ")) or "level=" in line or "Memory access" in line or "HSA_STATUS" in line
            or "illegal memory" in line or "HIP error" in line or "to call hip" in line
            or "ailed to " in line or "nable to " in line or ": cannot " in line or ": could not " in line
            or "<class '" in line or "exited with code" in line or "process exited, code=" in line
            or "Failed with result" in line or ": guarantee(" in line or ("/" in line and _pod_hint(line)))


def _pod_hint(line: str) -> bool:
    return "/" in line and ("BackOff" in line or "OOMKilled" in line or "Error " in line or "ErrImage" in line)


def _failed_pod(line: str) -> str | None:
    """The status of a pod row that `kubectl get pods` lists in a failed state."""
    m = _POD_ROW_RE.match(line) if _pod_hint(line) else None
    return m.group(1) if m else None


def _may_start(line: str) -> bool:
    c = line[:1]
    if c in _SYM_START or line[:2] in _WORD2:
        return True
    return (c == "E" or c == "F") and (line[1:2].isdigit() or (c == "E" and line[1:2].isupper())
                                       or (line[1:2] == " " and line[2:3].isdigit()))


# a logger that files whatever a child wrote on a stream under one level ("<ts> | ERROR | stderr | INFO: ...",
# FastChat): the relayed line says what it is, and an empty one says nothing
_RELAYED_RE = re.compile(r"[^|]{0,60}\|\s*(?:ERROR|CRITICAL)\s*\|\s*std(?:err|out)\s*\|\s?(.*)$")
_LOWER_LEVELS = ("INFO", "WARNING", "WARN", "DEBUG", "TRACE")


def generic_error(line: str) -> bool:
    """A candidate line that reports a failure in a format no family knows."""
    if is_caption(line):
        return False
    if _may_start(line) and GENERIC_ERROR_RE.match(line):
        if "| std" in line and (m := _RELAYED_RE.match(line)) is not None:
            rest = m.group(1).strip()
            return bool(rest) and not rest.startswith(_LOWER_LEVELS)
        return True
    if ("Assertion" in line or "rror: " in line or "RROR: " in line or "atal: " in line or "ATAL: " in line
            or line.endswith((":", ": "))) and _ANY_WORD_RE.match(line):
        return True
    if any(h in line for h in _ANYWHERE_HINTS) and _ANYWHERE_RE.search(line):
        return True
    if _failed_pod(line) is not None:  # (a pod that cannot start: its image, its config)
        return True
    if any(h in line for h in _FAILED_TO_HINTS) and _FAILED_TO_RE.match(line):
        return True
    if "<class '" in line and _CLASS_REPR_RE.search(line):
        return True
    if "level=" in line and _LOGFMT_RE.search(line):
        return True
    if line[:1] != "{":
        return False
    return bool(_JSON_LEVEL_RE.search(line)) or (not _JSON_ANY_LEVEL_RE.search(line) and bool(_JSON_ERROR_RE.search(line)))


# signs of a death anywhere in a record: a container state (kubectl describe), the kubelet
# backing off a container that keeps dying (its events), a C++ terminate in a native backtrace
_DEATH_ANYWHERE_RE = re.compile(r"\bReason:\s+(?:OOMKilled|CrashLoopBackOff)\b|__cxxabiv1::__terminate\b"
                                r"|\bBack-off restarting failed container\b"
                                r"|^\s+Exit Code:\s+[1-9]\d{0,2}\s*$")  # a container's last state: it died


def generic_death(line: str) -> bool:
    # (a line ending in "(core dumped)" is found with a substring test: ".*" in the pattern
    # scanned every candidate line to its end)
    return (bool(GENERIC_DEATH_RE.match(line)) or ("core dumped" in line and line.rstrip().endswith("(core dumped)"))
            or _failed_pod(line) in _POD_DEATHS
            or ("exited with code" in line and bool(_COMPOSE_EXIT_RE.match(line))))


# A native backtrace printed after a failure: c10's frame dump under "Exception raised from ...
# (most recent call first):" ("frame #3: c10d::TCPStore::check(...) + 0x273 (0x7c... in
# /.../libtorch_cpu.so)", "frame #9: /usr/bin/python3() [0x528b17]") and systemd-coredump's
# report of a process that dumped core ("#4  0x00007f2ed76cb0ad _PySemaphore_Wait
# (libpython3.13.so.1.0 + 0x2cb0ad)", "Stack trace of thread 91996:"), and Rust's backtrace of a
# panic (the router/gateway).
_C10_FRAME_RE = re.compile(r"frame #\d+: .*(?:\(0x[0-9a-f]+ in \S+\)|\[0x[0-9a-f]+\])\s*$")
_COREDUMP_FRAME_RE = re.compile(r"#\d+ +0x[0-9a-f]{8,16} \S+ \(\S+ \+ 0x[0-9a-f]+\)\s*$")
_COREDUMP_THREAD = "Stack trace of thread "
# Rust's backtrace of a panic: "  25:     0x7fb7396a2659 - sglang_router_rs::router::Router::new::h9d5b..."
_RUST_FRAME_RE = re.compile(r"\s*\d+: +0x[0-9a-f]{6,16} - \S")
# Go's goroutine dump, printed when a Go program dies (a panic, a fatal error, SIGQUIT): a function's
# line, then its source line with the frame's offset ("\tnet/fd_posix.go:55 +0x25 fp=0xc0 sp=0xc0 pc=0x64")
_GO_FRAME_RE = re.compile(r"\S+\.go:\d+ \+0x[0-9a-f]+\b")


def native_backtrace(body: list[str]) -> tuple[str, int] | None:
    """("error" or "crash", the index of the line to show) for a record holding two or more
    frames of a native backtrace, None otherwise."""
    lines = body[:64]
    text = "\n".join(lines)  # (one scan for the common case: no frame of either kind)
    rust_hint = "0x" in text and " - " in text
    go_hint = ".go:" in text and " +0x" in text
    if "frame #" not in text and " + 0x" not in text and _COREDUMP_THREAD not in text and not rust_hint and not go_hint:
        return None
    c10 = core = rust = go = 0
    first = -1
    for i, b in enumerate(lines):
        if "#" not in b and _COREDUMP_THREAD not in b:
            if rust_hint and _RUST_FRAME_RE.match(b):
                rust += 1
                first = i if first < 0 else first
            elif go_hint and _GO_FRAME_RE.search(b):
                go += 1
                first = max(i - 1, 0) if first < 0 else first  # the function's line above its source line
            continue
        s = b.lstrip()
        if s.startswith("frame #") and _C10_FRAME_RE.match(s):
            c10 += 1
        elif s.startswith(("#", _COREDUMP_THREAD)) and (s.startswith(_COREDUMP_THREAD) or _COREDUMP_FRAME_RE.match(s)):
            core += 1
        else:
            continue
        first = i if first < 0 else first
    if core >= 2 or go >= 2:
        return "crash", first
    if rust >= 2:
        return "error", first
    if c10 >= 2:
        raised = next((i for i, b in enumerate(body[:64]) if b.lstrip().startswith("Exception raised from ")), first)
        return "error", raised
    return None


def death_anywhere(text: str) -> re.Match[str] | None:
    if "Reason:" not in text and "__terminate" not in text and "Back-off" not in text and "Exit Code:" not in text:
        return None
    return _DEATH_ANYWHERE_RE.search(text)
