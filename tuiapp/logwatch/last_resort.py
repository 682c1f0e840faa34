"""The last resort: the marks of a failure anywhere in a line whose format no rule knows.

Every other rule reads a line where its format puts the failure: anchored after a prefix it
knows (SGLang's, a collector's envelope, a logger's). A log that passed through a wrapper
nobody has shown us (a job runner's tag, a viewer's line numbers, a relay that adds its own
time and level) puts an unknown prefix before the same text, and the anchored rules read
nothing. Out of sample, that was most of what the detector missed. So, for a record no rule
matched, this layer looks for what a careful operator's eye catches wherever it sits in the
line, and then for what makes such a line harmless:

- marks: a traceback (its header, or two frames), an exception line (``x.y.SomeError: ...``,
  a class from a package's exceptions module), an error level (``ERROR``, ``FATAL``,
  ``CRITICAL``, ``[error]``, ``level=error``: the first level the line names), a collective's
  or a device runtime's failure (``NCCL WARN``, ``NCCL failure``, ``Cuda failure``, ``CUDA
  error``, ``HIP error``), a death (a fatal signal, ``core dumped``, a non-zero exit code, a
  pod in ``CrashLoopBackOff``), and, weakest, the words ``failed`` / ``failure`` / ``error`` /
  ``fatal`` / ``could not`` / ``unable to``;
- vetoes: a lower level named first in the line (``INFO``, ``WARNING``, ``DEBUG``, glog's
  ``I``/``W``), the mark inside quotes or after a logged request (a prompt that says "error"),
  advice (``can be ignored``, ``if you see``, ``retrying``), counts of nothing (``0 failed``,
  ``errors: 0``), a warning class, an exception that only means "stopped" (KeyboardInterrupt).

Deaths are ``crash``, running out of memory (any device's, or the kernel's OOM killer) ``oom``; the
rest ``error``. The message is the decisive line as printed.
"""

from __future__ import annotations

import functools
import re

from tuiapp.logwatch.caption import is_caption
from tuiapp.logwatch.catalogue import NOT_A_FAILURE
from tuiapp.logwatch.quiet_exit import EXIT_NAMES, stops_quietly

# how many lines of a record are read
MAX_LINES = 64

# the first level a line names decides whether the marks after it count
_LEVEL_TOKEN_RE = re.compile(
    r"(?<![\w./=-])(ERROR|ERRO|ERR|FATAL|FATA|FTL|CRITICAL|CRIT|EMERG|PANIC|SEVERE|"
    r"INFO|INF|WARNING|WARN|WRN|DEBUG|DBG|TRACE|TRC|NOTICE|VERBOSE)(?![\w/-])"
    r"|(?:^|[\[<|( ])(error|fatal|critical|info|warning|warn|debug|notice|trace)[\]>|):]"
    r"|\b(?:level|lvl|severity)[=:]\s*\"?(\w+)"
    # Python's warnings module: "path.py:74: UserWarning: msg" is a warning, whatever its text says
    r"|(?<![\w.])[A-Z]\w*(Warning)(?=: )"
    # a bare "Warning: " at the start of a message, behind a tool's own bracketed prefix ("[0]:Warning: ")
    r"|(?:^|[\]:|])(Warning)(?=: )")
_ERROR_LEVELS = frozenset({"ERROR", "ERRO", "ERR", "FATAL", "FATA", "FTL", "CRITICAL", "CRIT", "EMERG", "PANIC",
                           "SEVERE", "error", "fatal", "critical", "err", "crit", "emerg", "alert", "panic"})
# glog/absl/c10's own format ("I0521 12:00:00.1 file.cc:N]", "[W516 12:46:57.4 x.cpp:N]", "E 08-31
# 21:02:44 x.py:84]", TensorFlow's "<date>: E path/x.cc:N]"): the generic layer reads its level
# (and knows which E lines are noise), wherever the line's prefix put it
_GLOG_RE = re.compile(r"(?:^|[\s\[:`])([IWEFV])(?:(?:\d{3,4}|\d{8}) [\d:.]+|\s\d\d-\d\d [\d:.]+|)\s+(?:\d+\s+)?"
                      r"[\w./-]+\.(?:cc|cpp|h|py|c|cu|go):\d+\]")
# spdlog as Ray's C++ processes print it: "[2022-04-12 13:46:39,948 C 74 74] (raylet) node_manager.cc:170: ..."
_SPDLOG_RE = re.compile(r"\[\d{4}-\d\d-\d\d [\d:,.]+ ([IWECFD]) \d+ \d+\]")
_GLOG_NOISE = ("Unable to register", "already been registered")  # TensorFlow's E lines on every import

_TB_RE = re.compile(r"Traceback \(most recent call last\)")
_OOM_ADVICE_RE = re.compile(r"\b(?:are|is) likely\b|\bmay (?:occur|happen)\b|\bto avoid\b|\bcan be ignored\b")
# (the kernel's OOM killer: "Out of memory: Killed process 15784 (python3)", on older kernels the victim's line
# alone: "Killed process 7748 (python) total-vm:12907828kB")
_OOM_RE = re.compile(r"\b(?:[Oo]ut of memory|OUT OF MEMORY|OutOfMemory\w*|OOM[- ]?[Kk]ill\w*|invoked oom-killer"
                     r"|Killed process \d+ \([^)]*\) total-vm)\b")
_FRAME_RE = re.compile(r"File \"[^\"]+\", line \d+, in \S")
_IPY_ARROW_RE = re.compile(r"\s*-{1,4}> ?\d+ ")
# Python's re tries every alternative at every position of a line, so a mark's alternatives are kept in
# small patterns, each tried only when the line holds the text it needs (one pattern of them all cost
# ~100 us on an ordinary NCCL INFO line).
_Part = tuple[tuple[str, ...], "re.Pattern[str]"]


def _parts(*pairs: tuple[tuple[str, ...], str]) -> list[_Part]:
    return [(needs, re.compile(pattern)) for needs, pattern in pairs]


def _first(parts: list[_Part], s: str) -> re.Match[str] | None:
    for needs, rx in parts:
        for n in needs:
            if n in s:
                if (m := rx.search(s)) is not None:
                    return m
                break
    return None


def _earliest(s: str, needs: tuple[str, ...]) -> int:
    """Where a pattern's search may start in ``s``: the character before the word that holds the first
    of ``needs`` ("UserWarning" for "Warning"); -1 when none is there."""
    at = -1
    for n in needs:
        i = s.find(n)
        if i >= 0 and (at < 0 or i < at):
            at = i
    if at < 0:
        return -1
    while at > 0 and (s[at - 1].isalnum() or s[at - 1] == "_"):
        at -= 1
    return max(at - 1, 0)


# the word before a colon, as an exception line names its class: "x.y.SomeError", any CamelCase class
# behind a dotted module path ("torch._dynamo.exc.FailOnRecompileLimitHit")
_EXC_NAME_RE = re.compile(r"((?:[a-z_]\w*\.)*[A-Z][A-Za-z0-9]*(?:Error|Exception|Exhausted|Fault|Failure)"
                          r"|(?:[a-z_]\w*\.){2,}[A-Z][A-Za-z0-9]+)(?:\([\w.]*\))?")
_COLON_RE = re.compile(r":(?: \S|\s*$)")


def _exception(s: str) -> tuple[str, int] | None:
    """(class name, where it starts) of an exception line in ``s``, wherever the prefix put it."""
    for c in _COLON_RE.finditer(s):
        end = c.start()
        if end and s[end - 1] == ")":  # "RayTaskError(OutOfMemoryError):"
            end = s.rfind("(", 0, end)
        start = end
        while start > 0 and (s[start - 1].isalnum() or s[start - 1] in "._"):  # (a loop: a pattern
            start -= 1  # anchored at the colon scanned every position before it)
        if start < end and (m := _EXC_NAME_RE.fullmatch(s, start, c.start())) is not None and (
                start == 0 or s[start - 1] not in "'\""):
            return m.group(1), start
    return None


_DEVICES = ("NCCL", "RCCL", "HCCL", "Gloo", "NRT", "XLA", "HSA", "ROCm", "cuDNN", "CUBLAS", "cuBLAS", "CUDA", "Cuda",
            "cuda", "HIP", "hip", "UR ", "SYCL", "nccl")
# marks whatever level the line names: NCCL's WARN is its error level; an RDMA work completion that failed
# (KV transfer engines log them at WARN and go on failing); a leak a check found; a death the process's
# supervisor reports at a warning level (Ray: "Raylet is terminated ... Termination is unexpected"); a
# network link or port that is down (RDMA, NCCL's transport)
_OS_NEEDS = ("Broken pipe", "reset by peer", "allocate memory", "No space left")
# (a warning of what a setting "can lead to" is advice about a risk, not a failure: RCCL's "NCCL WARN Missing
# "iommu=pt" from kernel command line which can lead to system instablity or hang!"; the NCCL family's too)
_NOT_HYPOTHETICAL = r"(?!.*\b(?:can|could|may|might) (?:lead to|cause|result in)\b)"
# (nor NCCL probing for the verbs library of an InfiniBand it may not have: without one it goes on over sockets,
# as every NCCL on a box without RDMA does)
_NOT_A_PROBE = r"(?!.*\bFailed to open libibverbs\b)"
NCCL_WARN_IS_A_FAILURE = _NOT_HYPOTHETICAL + _NOT_A_PROBE  # what follows "NCCL WARN" for it to be one
_OVERRIDING = _parts(
    (("NCCL WARN",), r"\bNCCL WARN\b" + NCCL_WARN_IS_A_FAILURE),
    # the operating system refusing a step outright, however the program filed it: a pipe or a connection
    # the peer broke, memory that could not be had ("WARNING: Remote connection failed in contains: [Errno 32]
    # Broken pipe", libfabric's "<warn> rdma_create_qp: Cannot allocate memory (12)")
    (_OS_NEEDS, r"\b(?:Broken pipe|Connection reset by peer|Cannot allocate memory|No space left on device)\b"),
    (("CQE", "WR_FLUSH", "IBV_WC", "remote access"),
     r"\bCQE error\b|\bWR_FLUSH_ERR\b|\bIBV_WC_(?!SUCCESS)[A-Z_]+\b|\bremote access error\b"),
    (("leak",), r"\bleak(?:s|ed)? detected\b"),
    (("nexpected", "unexpectedly", "not expected"),
     r"\b[Tt]ermination is unexpected\b|\b(?:terminated|exited|died|crashed) unexpectedly\b"
     # supervisord at INFO: "exited: webserver (exit status 1; not expected)"
     r"|\bexited: \S+ \([^()]*; not expected\)"),
    (("own", "OWN"), r"\b(?:link|[Pp]ort)\b.{0,80}\b(?:state|status) (?:is )?(?:DOWN|Down|down)\b"),
    # a Kubernetes event of type Warning that says something failed ("Warning  FailedScheduling  10h  ...
    # 0/6 nodes are available: 6 Insufficient nvidia.com/gpu", "Warning  BackOff", "Warning  Unhealthy")
    (("Warning ",), r"\bWarning {1,}(?:Failed\w*|BackOff|Unhealthy|Evicted|OOMKilling|NodeNotReady)\b"),
    # torch elastic's agent tearing the workers down (one failed) or told to stop (Slurm's timeout, a
    # preemption), at its WARNING level: "Sending process 484376 closing signal SIGTERM", "Received 15 death signal"
    (("closing signal", "via signal", "death signal"),
     r"\b(?:Sending process \d+ closing signal|Closing process \d+ via signal) SIG(?:TERM|KILL)\b"
     r"|\bReceived (?:15|9|Signals\.SIG(?:TERM|KILL)) death signal\b"),
)
# a server error answered to a request, in an access log or a structured field (whatever its level: access
# logs are INFO, and the field may sit in a quoted list: "['http_status:500', 'http_method:POST']")
# (an error object's code, "{"code":500,"message":...}"; an access line that ends in the status,
# "request: POST /v1/chat/completions 127.0.0.1 500", as llama.cpp's server and many proxies write it)
_HTTP_5XX_RE = re.compile(r"\b(?:http_status|status_code|status|response_code|HTTP code|HTTP status)[\"']?\s*[:=]?\s*[\"']?5\d\d\b"
                          r"|HTTP/\d(?:\.\d)?\"? 5\d\d\b|\"code\"\s*:\s*5\d\d\b"
                          r"|\b(?:GET|POST|PUT|PATCH|DELETE) /\S*(?: \S+){0,3} 5\d\d\s*$")
_HTTP_NEEDS = ("status", "HTTP/", "HTTP code", '"code"', "GET /", "POST /", "PUT /", "PATCH /", "DELETE /")
_DEVICE = _parts(
    (_DEVICES, r"\b(?:NCCL|RCCL|HCCL|Gloo|NRT|NRTD|XLA|HSA|ROCm|cuDNN|CUBLAS|cuBLAS|CUDA|Cuda|cuda|HIP|hip|UR|SYCL)"
               r"(?: \w+){0,2} (?:failure|error|Error|ERROR|failed)\b|\b(?:nccl|cuda|hip)Error\w+|\bnccl\w+Error\b"),
    # a runtime's status code ("UR_RESULT_ERROR_OUT_OF_RESOURCES", "CUBLAS_STATUS_EXECUTION_FAILED", "CUDA_ERROR_NO_DEVICE")
    (("_ERR", "_STATUS_"), r"\b[A-Z][A-Z0-9]*_(?:RESULT_)?(?:ERROR|ERR)_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9]*_STATUS_(?!SUCCESS)[A-Z_]+\b"),
    # a kernel backtrace's frame ("_nv013207rm+0x2c5/0x5b0 [nvidia]"): the kernel prints them on an oops or a BUG
    (("+0x",), r"\b\w+\+0x[0-9a-f]+/0x[0-9a-f]+\b"),
    # an Ascend CANN error code anywhere ("Get_Socket_Timeout(EI0006): ..."); the kernel's warning or oops banner
    (("(E", "cut here"), r"\(E[A-Z0-9]\d{4}\)|\[ cut here \]"),
    # the IOMMU or a GPU's memory hub refusing a device's access, however the kernel's line was copied or
    # prefixed ("nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT ...]", "drmn0: [mmhub] VMC page fault",
    # Intel's "DMAR: [DMA Read NO_PASID] Request device [0000:17:00.0] fault addr")
    (("PAGE_FAULT", "page fault", "DMAR"),
     r"\bIO_PAGE_FAULT\b|\[\w+\] (?:(?:no-)?retry |VMC |UTCL2 )?page fault\b|\bDMAR: \[DMA (?:Read|Write)\b"),
    # an Xid however the kernel's line was copied ("08-04 06:43:55 Xid 31 GPC1 ... FAULT_PDE")
    (("Xid", "fallen off"), r"\bXid(?: \(PCI:[\w:.]+\))?:? \(?\d+\b|\bfallen off the bus\b"),
    # a C++ backtrace's numbered frame, as TensorRT-LLM and glibc's backtrace print them under an exception
    # ("5       0x7f16747a1d02 tensorrt_llm::batch_manager::RuntimeBuffers::prepareStep(...) + 194")
    (("0x",), r"(?<!\S)\d{1,3}\s+0x[0-9a-f]{8,16}\s+(?:\w+::)+~?\w+\("),
    # glibc's backtrace_symbols frame, as Open MPI's, UCX's and many crash handlers print it
    # ("/lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]", "...(ucs_handle_error+0x294) [0x7f...]");
    # with a symbol: a frame without one ("libc.so.6(+0x2a1ca)") also closes backtraces printed with the error first
    (("+0x",), r"\.so(?:\.\d+)*\([\w.$@]+\+0x[0-9a-f]+\)\s?\[0x[0-9a-f]+\]"),
    # an error object in JSON
    (('"error"',), r"\"error\"\s*:\s*(?:\{|\"[^\"])"),
    # a sanitizer's report: the compiler's (ASan, UBSan, LSan: "==4321==ERROR: AddressSanitizer: heap-buffer-overflow"),
    # Intel's for a device ("====ERROR: DeviceSanitizer: out-of-bounds-access"), NVIDIA's compute-sanitizer's
    # ("========= Invalid __global__ write of size 4 bytes")
    (("Sanitizer: ", "Invalid __"),
     r"=(?:\d+=)?=*ERROR: \w*Sanitizer: \S|=+ Invalid __(?:global|shared|local)__ (?:read|write|atomic)\b"),
) + _OVERRIDING
# a C/C++ assertion macro that failed ("GGML_ASSERT: ggml-cuda.cu:5925: false", "NVSHMEMI_ASSERT(...) failed"): an
# assertion, as an AssertionError is, whose abort follows
_C_ASSERT_RE = re.compile(r"\b[A-Z][A-Z0-9]*_ASSERT\w*(?:: \S|\(.*\) failed)")
_DEATH = _parts(
    (("Segmentation fault", "core dumped"), r"\bSegmentation fault\b|\bcore dumped\b"),
    (("SIG",), r"\bSIG(?:SEGV|ABRT|BUS|KILL|FPE|ILL)\b"),
    (("signal ",), r"\bsignal (?:6|9|11)\b"),
    (("OOMKilled", "CrashLoopBackOff"), r"\bOOMKilled\b|\bCrashLoopBackOff\b"),
    (("xit",), r"\bexited with (?:code|status) -?[1-9]\d*\b|\b[Ee]xit (?:[Cc]ode|status)\s*[:=]?\s*-?[1-9]\d*\b"
               r"|\bexitcode\s*:\s*-?[1-9]\d*\b"),
    (("code=", "status="), r"\bcode=killed\b|\bstatus=\d+/(?:KILL|SEGV|ABRT|BUS|FAILURE)\b"),
    (("panic",), r"\bpanicked at\b|\bpanic: "),
    # Slurm's record of a job that ended badly (scontrol show job, sacct -o JobState)
    (("JobState=",), r"\bJobState=(?:FAILED|NODE_FAIL|BOOT_FAIL|OUT_OF_MEMORY|DEADLINE)\b"),
    # a row of sacct's table for a step that ended badly: the state (cut to its column: "OUT_OF_ME+") and
    # the exit code and signal ("0:125")
    (("FAIL", "OUT_OF_ME"), r"\b(?:FAILED|NODE_FAIL|BOOT_FAIL|OUT_OF_ME(?:MORY|\+))\s+\d+:\d+\s*$"),
    # UCX's crash handler ("==== backtrace (tid:2330856) ====")
    (("backtrace",), r"=+ backtrace \(tid:\s*\d+\) =+"),
    (("died", "killed", "dead"),
     r"\b(?:process|worker|actor|engine|scheduler|child)\b[^.]{0,40}\b(?:died|was killed|is dead)\b"
     r"|\b(?:marked|is) as dead\b"),
    (("Killed", "Terminated", "StackTrace", "nhandled", "nexpected", "unexpectedly"),
     r"\btask \d+: Killed\b|\bForce Terminated\b|\*\*\* StackTrace Information \*\*\*|\b[Uu]nhandled exception\b"
     r"|\b[Tt]ermination is unexpected\b|\b(?:terminated|exited|died|crashed) unexpectedly\b"),
)
_LEVEL_NEEDS = ("ERR", "FATA", "FTL", "CRIT", "EMERG", "PANIC", "SEVERE", "INF", "WARN", "WRN", "DEBUG", "DBG", "TRACE",
                "TRC", "NOTICE", "VERBOSE", "error", "fatal", "critical", "info", "warn", "debug", "notice", "trace",
                "level", "lvl", "severity", "Warning")
_SOFT_NEEDS = ("ail", "AIL", "rror", "atal", "ould", "nable to", "bort", "imed out", "imes out", "rash", "❌", "✗",
               "✘", "💥", "orrupt", "xceeded", "EXCEEDED", "imeout", "IMEOUT")
_GLOG_NEEDS = (".cc:", ".cpp:", ".h:", ".py:", ".c:", ".cu:", ".go:")
# (a logger's or module's name is no mark: "uvicorn.error INFO ...")
_SOFT_RE = re.compile(
    r"(?<![\w.])(?:[Ff]ailed|FAILED|[Ff]ailure|FAILURE|[Ee]rror|[Ff]atal|[Cc]ould not|[Cc]ouldn't|[Uu]nable to"
    r"|[Aa]borted|[Tt]imed out|[Tt]imes out|[Cc]orrupt(?:ed|ion)"
    # a check's result in a table ("| Fail - GPU: 0 |", "FAIL |"; SGLang's own "Fail to set RLIMIT_NOFILE" is advice)
    r"|(?:Fail|FAIL)(?=\s+-\s|\s*\||\s*$)"
    # a timeout that happened ("dispatch forwarder timeout (RDMA meta)", "Timeout waiting for rank 3"), not a
    # setting ("--timeout 600", "timeout=30", "timeout is 30 s", "a timeout of 10 s")
    r"|(?<![-_=])(?:[Tt]imeout|TIMEOUT)(?![\w=:-]|\s*[=:]|\s+(?:\d|is|of|set|to|value|in|for|after|must|can|may|should)\b)"
    # a limit a step ran into: "retry count exceeded", "exceeded timeouts (3)", "Max retries exceeded"
    r"|(?:timeouts?|[Rr]etry count|retries|[Dd]eadline|time limit|quota) (?:\(\d+\) )?exceeded"
    r"|exceeded (?:timeouts?|(?:the )?(?:retry|deadline|time limit|quota))|DEADLINE_EXCEEDED"
    r"|[Cc]rash(?:ed|es)?)(?!\w|\.\w)|[❌✗✘💥]")
# (phrases looked for in the lowercased line; those that need a word's edge, in one pattern tried only when
# the line holds one of their words: a case-blind pattern of them all cost ~50 us a line)
_ADVICE_PHRASES = ("can be ignored", "can be safely ignored", "please", "will retry", "deprecat", "not an error",
                   "falling back", "fallback", "error rate", "error_rate", "skipping", "this warning", "silence",
                   "not available", "command not found", "not installed", "could not collect", "defaulting",
                   # a shell started without a terminal
                   "cannot set terminal process group", "no job control")
_ADVICE_WORDS = ("ignor", "retry", "no error", "succe", "likely", "may ", "expected", "you ", "without", "taint",
                 "default", "image '")
_ADVICE_RE = re.compile(
    r"\bignor(?:e|ed|ing)\b|\bretry(?:ing)?\b(?! (?:count|limit))|\bno errors?\b|\bsucce(?:ss|ssful|eded)|\b(?:are|is) likely\b"
    r"|\bmay (?:occur|happen)\b|\b(?:as|is|was) expected|\byou (?:can|may|might|should)\b"
    r"|\bif you (?:see|get|encounter)\b|\bwithout (?:an )?errors?\b|\busing (?:the )?default"
    # a kernel module without a signature (loads anyway); docker about to pull an image it lacks
    r"|\btaint(?:s|ing) (?:the )?kernel|unable to find image '[^']*' locally")


def _advice(line: str) -> bool:
    """The line gives advice or an outcome, not a failure ("can be ignored", "retrying", "succeeded")."""
    low = line.lower()
    for p in _ADVICE_PHRASES:
        if p in low:
            return True
    for w in _ADVICE_WORDS:
        if w in low:
            return _ADVICE_RE.search(low) is not None
    return False


# a person's sentence around a paste ("I got this error:"), not a line a process printed
# (or a markdown bold span: "**Every one is `Xid 31`**")
_PROSE_RE = re.compile(r"(?:^|\s)(?:I|I'm|I've|my|My|me|we|We|our|Our|Hi|Hello|Thanks)(?:\s|,|$)|\*\*\w[^*]*\*\*"
                       r"|^(?:[Ii]t|[Tt]his|[Tt]hat) (?:throws|threw|gives|gave|shows|showed|fails|failed|crashes|crashed"
                       r"|seems|looks|says|said|reports|returns|returned)\b")
_HW_SEVERE_RE = re.compile(r"(?i)\b(?:event severity|type): (?:fatal|recoverable)\b|\buncorrect|\bfatal\b")
_ZERO_RE = re.compile(r"(?i)\b0 (?:(?-i:[a-z]+s) )?(?:failed|failures?|errors?)\b|\b(?:failed|failures?|errors?)(?:\s+\w+){0,2}\s*[=:]\s*0\b")
_ECHO_RE = re.compile(r"(?:Receive:|obj=|text=|prompt|\"content\"|'content'|messages=|input_ids)")
# an exception class that may say "stopped", printed without a message ("KeyboardInterrupt", "SystemExit: 1")
_EXIT_LINE_RE = re.compile(r"(?:^|\s)((?:\w+\.)*(?:" + "|".join(sorted(EXIT_NAMES)) + r"))(?::.*)?$")
# the marks' letters: a line without any is skipped without a regex
_HINTS = ("rror", "ERR", "rash", "emory", "OOM", "oom-kill", "fallen off", "+0x", "xpected", "nhandled", "Warning ",
          "DOWN", "Down", "down", "cut here", "(E", "ouldn't", "imes out", "imeout", "IMEOUT", "JobState=",
          "OUT_OF_ME", "_ASSERT", "orrupt", "xceeded", "EXCEEDED", "Xid", "Killed", "Terminated", "dead",
          "StackTrace", "backtrace", "❌", "✗", "✘", "💥", "0x", "leak", "ail", "AIL", "atal", "ATAL",
          "RITICAL", "Traceback", "File \"", "xception", "NCCL", "Cuda", "CUDA", "core dumped",
          "page fault", "PAGE_FAULT", "DMAR", "Segmentation", "SIG", "signal ", "BackOff", "xit", "code=",
          "panic", "died", "killed", "ould not", "nable to", "bort", "imed out", "level", "severity", "Fault",
          "Exhausted", "error]", "fatal]",
          "closing signal", "via signal", "death signal", "Invalid __", *_OS_NEEDS, *_HTTP_NEEDS)


_FORMAT_LOWER = frozenset({"INFO", "INF", "WARNING", "WARN", "WRN", "DEBUG", "DBG", "TRACE", "TRC", "NOTICE", "VERBOSE"})


def _level_of(line: str, m: re.Match[str]) -> str:
    """The level the line's format names: the first one, unless a relay filed a child's line
    under its own level ("<ts> | ERROR | stderr | INFO: Started server"): then the inner one."""
    level = m.group(1) or m.group(2) or m.group(3) or "WARNING"
    at = line.find("std", m.end(), m.end() + 12)
    stream = _STREAM_RE.match(line, at) if m.group(1) and at >= 0 else None
    if stream is not None and line[m.end():stream.start()].strip(" |:-[]") == "":
        # a relay filing a child's stream under one level: that level says nothing of the child's line,
        # whose own level (if it names one) decides ("| INFO | stdout | ... Traceback", "| ERROR | stderr | INFO:")
        inner = next((x for x in _LEVEL_TOKEN_RE.finditer(line, stream.end()) if x.group(1)), None)
        return inner.group(1) if inner is not None else ""
    return level


_FRAME_QUOTE_RE = re.compile(r'File "|", line \d')


def _quoted(line: str, pos: int) -> bool:
    """The mark sits inside a quoted string (a logged prompt, a repr of a request); a quote that opens
    the line is a paste quoted as a whole ('"srun: error: c002: task 0: Killed')."""
    head = line[:pos].lstrip("\"'`")
    if '", line ' in head:
        # a frame's path is quoted ('File "x.py", line 3, in f'); a line run together from several, or
        # one that starts inside a frame ('x.py", line 213, in f ... RuntimeError'), holds halves of pairs
        head = _FRAME_QUOTE_RE.sub("", head)
    return head.count('"') % 2 == 1 or (head.count("'") % 2 == 1 and "'" in line[pos:])


_STREAM_RE = re.compile(r"\bstd(?:err|out)\b")


def _says_something(line: str, m: re.Match[str]) -> bool:
    """Text follows the level (a logger filing a child's empty stderr line under ERROR says nothing)."""
    return bool(_STREAM_RE.sub("", line[m.end():]).strip(" |:-[]>)"))


def _harmless(line: str, pos: int, advice: bool = True) -> bool:
    return _quoted(line, pos) or (advice and _advice(line)) or bool(_ZERO_RE.search(line))


# how much a mark says: the strongest in a record is the decisive line
_RANK = {"death": 5, "traceback": 4, "exception": 4, "device": 3, "glog": 3, "level": 2, "soft": 1}


# The ranks of a server print the same lines (each rank's "Load weight begin", each rank's frame of one
# traceback), and a record no rule matched comes back here once per rank: a small cache of recent
# lines reads each once. (Small: it holds what is near, not a whole log.)
@functools.lru_cache(maxsize=256)
def line_mark(line: str) -> tuple[str, int] | None:
    """("crash", "oom", "assertion" or "error", how much it says) for one line, wherever in it the mark sits."""
    if not any(h in line for h in _HINTS):
        return None
    s = line.strip()
    if not s or s[:1] in "#$" or s.startswith(("//", "--")):
        return None  # a comment, a shell prompt's command, a separator
    if (e := _ECHO_RE.search(s)) is not None:
        # a logged request: what follows is the client's text (a prompt that says "error")
        s = s[:e.start()]
        if not any(h in s for h in _HINTS):
            return None
    if any(n in s for n in NOT_A_FAILURE):
        return None  # the diagnostics of a failure another line reports
    if "Hardware Error]" in s and _HW_SEVERE_RE.search(s) is None:
        # the kernel's machine-check and APEI reports: their lines say "error" whatever the error was; a
        # corrected one ("event severity: corrected", "Corrected error, no action required") is no failure,
        # so only a line naming an uncorrected severity is a mark
        return None
    if is_caption(s):
        return None
    if "]" in s and any(n in s for n in _GLOG_NEEDS) and (g := _GLOG_RE.search(s) or _SPDLOG_RE.search(s)):
        # glog / absl / c10's own level, wherever the prefix put it
        if g.group(1) in "EFC" and not any(n in s for n in _GLOG_NOISE) and s[g.end():].strip():
            return "error", _RANK["glog"]
        return None
    if any(n in s for n in _HTTP_NEEDS) and _HTTP_5XX_RE.search(s) and not _advice(s):
        return "error", _RANK["device"]
    at = _earliest(s, _LEVEL_NEEDS)
    lvl = _LEVEL_TOKEN_RE.search(s, at) if at >= 0 else None
    level = None if lvl is None else (_level_of(s, lvl) or None)
    if lvl is not None and level is not None and level not in _ERROR_LEVELS and _first(_OVERRIDING, s) is None:
        # a lower level governs what follows it: only a mark before it (a line glued to another) counts
        s = s[:lvl.start()]
        level = None
        if not s.strip():
            return None
    if (m := _first(_DEATH, s)) is not None and not _harmless(s, m.start()):
        return "crash", _RANK["death"]
    if "_ASSERT" in s and (m := _C_ASSERT_RE.search(s)) is not None and not _harmless(s, m.start()):
        return "assertion", _RANK["death"]  # (it aborts the process: it says as much as a death)
    if ("emory" in s or "OOM" in s or "oom-kill" in s or "total-vm" in s) and (m := _OOM_RE.search(s)) is not None and not (
            _quoted(s, m.start()) or _OOM_ADVICE_RE.search(s)):
        # (advice does not make it harmless: torch's own OOM message ends "try setting max_split_size_mb")
        return "oom", _RANK["death"]  # any device's, or the kernel's OOM killer ("Out of memory: Killed process")
    if "Traceback" in s and (m := _TB_RE.search(s)) is not None and not _quoted(s, m.start()):
        return "error", _RANK["traceback"]
    if ":" in s and (e := _exception(s)) is not None and not _harmless(s, e[1], advice=e[1] > 0):
        # (an exception line that opens the line was raised whatever its message advises: "NotImplementedError:
        # ... please use `key in td.keys()` instead"; one behind other words may be a sentence about it)
        if not stops_quietly(e[0], s):
            return "error", _RANK["exception"]
    if (m := _first(_DEVICE, s)) is not None:
        at, rank = m.start(), _RANK["device"]
    elif level is not None and lvl is not None and _says_something(s, lvl):
        at, rank = lvl.start(), _RANK["level"]  # an error level, whatever format put it there
    elif (soft_at := _earliest(s, _SOFT_NEEDS)) >= 0 and (m := _SOFT_RE.search(s, max(soft_at - 16, 0))) is not None:
        # (from a little before the first word it needs: "retry count exceeded" needs "exceeded")
        at, rank = m.start(), _RANK["soft"]
    else:
        return None
    if _PROSE_RE.search(s) or _harmless(s, at):
        return None
    return "error", rank


def _source_beside(lines: list[str], i: int) -> bool:
    """The frame at ``i`` has its source line after it, or the previous frame's before it: code indented
    deeper than the frame, not a frame, not a message (whatever prefix both carry: an editor's line
    numbers, "409   File ...", "410     ) = self.f(batch)")."""
    col = lines[i].find('File "')
    for j in (i - 1, i + 1):
        if 0 <= j < len(lines):
            b = lines[j]
            code = b[col:].strip()
            if len(b) > col and b[col].isspace() and code and not code.startswith(("File ", "Traceback")) \
                    and ": " not in code:
                return True
    return False


def last_resort(body: list[str]) -> tuple[str, int] | None:
    """(kind, index of the decisive line) for a record no rule matched, or None."""
    lines = body[:MAX_LINES]
    frames = [i for i, b in enumerate(lines) if 'File "' in b and _FRAME_RE.search(b)]
    if len(frames) == 1 and _source_beside(lines, frames[0]):
        frames.append(frames[0])  # one frame with its source line: a piece of a traceback all the same
    elif not frames and sum(1 for b in lines if "> " in b and _IPY_ARROW_RE.match(b)) >= 2:
        # IPython's traceback marks the line each frame was at ("---> 1161     return fn(*args)"),
        # whatever way its frame lines were exported
        frames = [i for i, b in enumerate(lines) if "> " in b and _IPY_ARROW_RE.match(b)]
    if len(frames) >= 2:
        # a traceback whatever its prefix: the exception line after its last frame says what it was
        for i in range(frames[-1] + 1, len(lines)):
            line = lines[i].rstrip()
            if (x := _EXIT_LINE_RE.search(line)) is not None:
                # stopped (an interrupt), or a process that gave up: "SystemExit: 1"
                return None if stops_quietly(x.group(1), line) else ("error", i)
            if ":" in line and (e := _exception(line)) is not None:
                return None if stops_quietly(e[0], line) else ("error", i)
        return "error", frames[-1]
    best: tuple[str, int, int] | None = None  # kind, rank, index
    for i, b in enumerate(lines):
        mark = line_mark(b)
        if mark is not None and (best is None or mark[1] > best[1]):
            best = (mark[0], mark[1], i)
    return None if best is None else (best[0], best[2])


_DIGITS_RE = re.compile(r"0x[0-9a-fA-F]+|\d+")


def _shape(line: str) -> str:
    return _DIGITS_RE.sub("n", line.strip().lower())[:160]


def separate_marks(body: list[str], decisive: int) -> list[int]:
    """The other lines of a record no rule matched that report a failure of their own: a paste, or a
    process whose format no rule knows, joins several into one record (two srun errors of a checklist,
    a GPU lost and, ten lines on, a tool failing to read it). A line counts when it bears a mark
    stronger than a failure word, follows a line without one (consecutive error lines are one burst:
    one incident) and its text, numbers aside, is neither the decisive line's nor one taken before; a
    traceback, and a line indented under another, are parts of one failure."""
    lines = body[:MAX_LINES]
    if any('File "' in b and _FRAME_RE.search(b) for b in lines):
        return []
    seen = {_shape(body[decisive])} if decisive < len(body) else set()
    apart = []
    after_mark = False
    for i, b in enumerate(lines):
        mark = None if b[:1].isspace() and i != decisive else line_mark(b)
        if mark is not None and i != decisive and not after_mark and mark[1] >= _RANK["level"]:
            # (a failure word alone is too weak to stand apart: a person's sentence has them)
            shape = _shape(b)
            if shape not in seen:
                seen.add(shape)
                apart.append(i)
        after_mark = mark is not None or i == decisive
    return apart
