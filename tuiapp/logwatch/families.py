"""The failure families: one rule per way a known failure is printed (an OOM, NCCL's watchdog, an
Xid, a server's death...), each a kind, a pattern anchored at the start of a candidate line, and
the kind's place in PRIORITY (most specific first). ``match_rule`` is the one way to ask which
family a line belongs to; logwatch/classify.py decides a record with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuiapp.logwatch.last_resort import NCCL_WARN_IS_A_FAILURE
from tuiapp.logwatch.prefix import KERNEL_LINE_PREFIX

_E = r"[\w.]*(?:Error|Exception): "  # an exception line's type
# argparse's verdict on a command line (launch_server.py, `sglang serve`)
ARGPARSE_ERROR = (r"(?:[\w.-]+: )?error: (?:unrecognized arguments: |the following arguments are required: "
                  r"|argument -|ambiguous option: )")
# NVSHMEM reports an error as the source line that saw it (DeepEP's bootstrap, multi-node EP)
NVSHMEM_SOURCE_LINE = r"\S*nvshmem\S*\.(?:cpp|cu|h):[\w:]*\d+: "
# the head of NCCL's own log line, up to its level
# (a wrapper or NCCL_DEBUG_TIMESTAMP_FORMAT may put a date before it)
NCCL_HEAD = r"(?:\d{4}-\d\d-\d\d[ T][\d:.,]+ )?\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL "

_NEGATIVE_CAPACITY = (r".*\b(?:[Aa]vailable|[Aa]vail|[Ff]ree|profiled|max_total_num_tokens|max_total_tokens"
                      r"|num_gpu_blocks|GPU blocks|KV cache (?:memory|size|tokens|blocks))\b[^\n]{0,24}?")

PRIORITY = ["oom", "cuda_fault", "nccl", "ep_bootstrap", "jit_arch", "keyerror", "assertion", "numerical", "hang",
            "xid", "transfer", "request", "kv_pressure", "error", "crash"]


@dataclass(slots=True)
class Rule:
    kind: str
    regex: re.Pattern[str]
    severity: str = "error"
    signature: str | None = None  # fixed signature: one incident whatever the text
    prio: float = 0.0
    wrapper: bool = False  # only wraps a cause: a more specific kind elsewhere in the record wins
    specific: int = 1  # crash lines: how much the line says about the death (the best one is shown)
    needs: str = ""  # tried only on lines holding this text (kept out of the one-pass union)


def _r(kind: str, pattern: str, severity: str = "error", signature: str | None = None,
       flags: int = 0, prio: float | None = None, wrapper: bool = False, specific: int = 1, needs: str = "") -> Rule:
    return Rule(kind, re.compile(pattern, flags), severity, signature,
                PRIORITY.index(kind) if prio is None else prio, wrapper, specific, needs)


CRASH_PRIO = PRIORITY.index("crash")
RULES: list[Rule] = [
    _r("oom", r"(?:torch\.)?(?:cuda\.)?OutOfMemoryError\b"),
    _r("oom", r"[\w.]*Error\((?:[\w.]*\.)?OutOfMemoryError\)"),  # ray.exceptions.RayTaskError(OutOfMemoryError)
    _r("oom", _E + r".*\bCUDA (?:error: )?out of memory"),
    _r("oom", _E + r"Not enough memory\b"),
    _r("oom", r"(?:" + _E + r")?(?:Prefill|Decode) out of memory\."),  # not "...memory happened"
    # a capture failure is an oom unless its cause names something more specific
    # (FlashInfer JIT arch, NCCL invalid usage, an assertion)
    _r("oom", _E + r".*\bCapture (?:cuda graph|[\w ]*CUDA graph) failed", prio=PRIORITY.index("error") - 0.5,
       wrapper=True),
    # ... but one whose cause is an exception that says nothing of memory is that error ("RuntimeError: Cannot
    # call CUDAGeneratorImpl::current_seed during CUDA graph capture")
    _r("error", _E + r".*\bCapture (?:cuda graph|[\w ]*CUDA graph) failed: (?!.*(?:[Mm]emory|OOM|alloc))"
       r"[\w.]*(?:Error|Exception): ", prio=PRIORITY.index("error") - 0.6, wrapper=True),
    _r("oom", _E + r".*CUBLAS_STATUS_ALLOC_FAILED"),
    _r("oom", NCCL_HEAD + r"WARN .*out of memory"),
    # a memory or KV-cache capacity measured below zero: the weights left no room for the KV pool
    # (vLLM's "Available KV cache memory: -0.87 GiB", SGLang's "... larger than the profiled value
    # -561981"); -1 alone is a setting's "unset", and a usage or a delta may well be negative
    *(_r("oom", _NEGATIVE_CAPACITY + sep + r"-(?!1\b)\d", needs=sep + "-") for sep in (": ", "=", "value ")),
    _r("nccl", r"Watchdog caught collective operation timeout"),
    _r("nccl", r"(?:[\w.]+\.)?DistBackendError\b"),
    _r("nccl", _E + r".*\bNCCL (?:error|communicator was aborted)"),
    # the what() line under it names the failure better
    _r("nccl", r"terminate called after throwing an instance of 'c10::DistBackendError'",
       prio=PRIORITY.index("nccl") + 0.1),
    _r("nccl", r"what\(\):.*(?:collective operation timeout|NCCL error)"),
    _r("nccl", r"Process group watchdog thread terminated with exception: .*(?:timeout|NCCL)"),
    # Gloo (the CPU process group) fails the same ways NCCL does
    _r("nccl", r"(?:" + _E + r")?\[[^\]]*gloo/transport/\w+/[\w.]+:\d+\] "),
    _r("nccl", r"Gloo connectFullMesh failed\b"),
    _r("nccl", r"(?:\[Rank \d+\]:? )?Ranks? [\d, ]+ failed to pass monitoredBarrier"),
    _r("nccl", r"Rank \d+ successfully reached monitoredBarrier, but received errors"),
    # NCCL's own WARN level: real failures follow with an error (traceback, c10 watchdog)
    # that joins the same incident and makes it an error; a WARN at shutdown stays a warning.
    # NCCL prints "host:pid:tid [dev] file.cc:N NCCL WARN msg" (the source location since 2.x,
    # none before); a paste may keep only "file.cc:N NCCL WARN msg".
    # (not a WARN of what a setting "can lead to": RCCL's advice on a missing kernel parameter)
    _r("nccl", NCCL_HEAD + r"WARN\b" + NCCL_WARN_IS_A_FAILURE, "warning"),
    _r("nccl", NCCL_HEAD + r"ERROR\b"),
    # nccl-tests reporting a failed NCCL call: "NCCL failure common.cu:908 'unhandled cuda error'"
    _r("nccl", r"(?:Test )?NCCL failure [\w./-]+:\d+ '"),
    _r("nccl", r"(?:[\w.-]+/)*[\w.-]+\.(?:cc|c|cu|cpp|h):\d+ NCCL WARN\b" + NCCL_WARN_IS_A_FAILURE, "warning",
       needs="NCCL WARN"),
    # a kernel fault CUDA reports to the exception of whatever call noticed it (also when that is a
    # CUDA-graph capture: the fault, not memory, is the cause)
    _r("cuda_fault", _E + r".*\b(?:an illegal (?:memory access|instruction) was encountered|misaligned address"
       r"|unspecified launch failure)", signature="cuda_fault"),
    # a CUDA fault the NCCL watchdog thread noticed (the faulting kernel ran earlier, elsewhere)
    _r("cuda_fault", r"(?:\s*what\(\):\s+)?(?:\[E[\w ]*\.cpp:\d+\] )?(?:\[(?:PG [^\]]*|Rank \d+)\] ?)*"
       r"(?:NCCL|Process group) watchdog thread terminated with exception: CUDA error: ", signature="cuda_fault"),
    # expert parallelism: DeepEP's NVSHMEM bootstrap; the summary lines say most
    _r("ep_bootstrap", NVSHMEM_SOURCE_LINE, signature="ep_bootstrap"),
    _r("ep_bootstrap", r"(?:transport create connect|connect EPS) failed\s*$", signature="ep_bootstrap"),
    # the summary lines: shown instead of the first line of the burst (specific=2)
    _r("ep_bootstrap", r"(?:" + NVSHMEM_SOURCE_LINE + r")?(?:NVSHMEM API called before NVSHMEM initialization|nvshmem (?:initialization|setup connections)"
       r" failed|aborting due to error in nvshmemi_init)", signature="ep_bootstrap",
       prio=PRIORITY.index("ep_bootstrap") - 0.1, specific=2),
    # numerical faults: SGLang's sampler checks the logits/probabilities of each batch
    _r("numerical", r"(?:" + _E + r")?(?:Detected errors during sampling! )?NaN (?:in|detected in) (?:the )?"
       r"(?:logits|probabilit\w*)", signature="numerical"),
    # torch's sampler refusing a distribution that went non-finite
    _r("numerical", _E + r"probability tensor contains either \W?inf\W?, \W?nan\W? or element < 0",
       signature="numerical"),
    # kernel Xid events (dmesg or a journal fed through --log-cmd): one incident per Xid code
    _r("xid", KERNEL_LINE_PREFIX + r"NVRM: Xid \(PCI:[\w:.]+\): \d+\b"),
    # DCGM's health watch reporting one (dcgmi health, dcgm-exporter, a node condition in Kubernetes):
    # "ErrorCode:DCGM_FR_XID_ERROR GPU:4 ... Detected XID 31 for GPU 4 Please consult the documentation ..."
    _r("xid", r".*\b(?:DCGM_FR_XID_ERROR\b|Detected XID \d+ for GPU \d+)", needs="XID"),
    # prefill/decode disaggregation: a request whose KV transfer or bootstrap failed
    # (Mooncake, NIXL); the server goes on, the request gets an error
    _r("transfer", r"(?:Decode|Prefill|Encode|Embedding) (?:transfer|bootstrap) failed for request\b",
       "warning", "transfer"),
    _r("transfer", r"E\d{4} [\d:.]+ +\d+ (?:\w*transport\w*|transfer_\w+|nixl_\w+|ucx_\w+)\.cpp:\d+\] ",
       "warning", "transfer"),
    # a request the server answered with 500 in its own access log
    _r("request", r"INFO: +\S+ - \"[A-Z]+ \S+ HTTP/[\d.]+\" 500\b", "warning", "request"),
    _r("jit_arch", r"nvcc fatal\s*: Unsupported gpu architecture"),
    _r("jit_arch", r"ptxas fatal\s*: Value '(?:sm|compute)_\d+a?' is not defined"),
    _r("jit_arch", r"ptxas .*not supported on \.target '(?:sm|compute)_\d+"),
    _r("jit_arch", _E + r".*(?:no kernel image is available|cudaErrorNoKernelImageForDevice)"),
    _r("jit_arch", _E + r".*\b(?:unsupported|not supported|does not support|no supported|unknown)\b.*"
       r"\b(?:sm_?\d{2,3}a?|compute_\d{2,3}a?|gpu arch\w*|cuda arch\w*|architecture|compute capability)",
       flags=re.IGNORECASE),
    _r("keyerror", r"KeyError\b"),
    _r("assertion", r"AssertionError\b"),
    _r("hang", r"Scheduler watchdog timeout\b", signature="hang"),
    _r("hang", r"Watchdog timeout \(self\.watchdog_timeout=", signature="hang"),  # older spelling
    _r("hang", r"Health check failed\. Server couldn't get a response", "warning", "hang"),
    _r("kv_pressure", r"KV cache pool is full\. Retract requests\.", "warning", "kv_pressure"),
    # the older spelling of the same retraction warning (logger.info, not a failure)
    _r("kv_pressure", r"[Dd]ecode out of memory happened\b", "warning", "kv_pressure"),
    _r("error", r"\w+ hit an exception\b", wrapper=True),
    _r("error", r"Initialization failed\. warmup error", wrapper=True),
    _r("error", r"[\w.-]+\.py: error: "),  # argparse: unrecognized/ambiguous option
    _r("error", ARGPARSE_ERROR),  # `sglang serve` and diffusion serve print it bare or as "sglang: error:"
    _r("error", r"ERROR:\s+\[Errno \d+\] "),  # uvicorn: e.g. the port is taken
    # the router/gateway dropping a worker it found dead (it logs that as a warning and goes on
    # with the others; the worker is lost all the same)
    _r("error", r".*\bRemoving (?:failed|unhealthy|dead) worker\b", needs="Removing "),
    # ways the server dies; `specific` ranks how much a line says about the death
    _r("crash", r"(?:Message: ['\"])?Received sigquit from a child proces+\b", signature="crash", specific=0),
    _r("crash", r"SIGQUIT received\.", signature="crash", specific=0),
    _r("crash", r"Subprocess \S+ (?:\(pid=\d+\) )?crashed with exit code -?\d+", signature="crash", specific=3),
    _r("crash", r"(?:" + _E + r")?Rank \d+ scheduler died during initialization", signature="crash", specific=3),
    _r("crash", r"Rank \d+ scheduler is dead\b", signature="crash", specific=3),
    _r("crash", r"Exit code: -?[1-9]\d*\s*$", signature="crash", specific=1),  # 0 is a clean exit
    _r("crash", r"(?:" + _E + r")?Initialization failed\. Please see the error messages above",
       signature="crash", specific=0, wrapper=True),
    _r("crash", r"terminate called after throwing an instance of\b", signature="crash", specific=2),
    _r("crash", r"Fatal Python error: (?:Aborted|Segmentation fault|Bus error|Floating point exception"
       r"|Illegal instruction)", signature="crash", specific=2),
    _r("crash", r"(?:.*\bline \d+: +\d+ Killed\b|Killed\s*$)", signature="crash", specific=0, needs="Killed"),
    _r("crash", r"Segmentation fault \(core dumped\)", signature="crash", specific=2),
]
# One pass over all rules for the common case of an ordinary line. A rule that must scan the
# line (".*" first: the shell's "line N: PID Killed") or that begins with any word (a bare
# NCCL source location) stays out of it and is tried only when the line has its text: in the
# union it doubled the cost of every ordinary line.
SCAN_RULES = [r for r in RULES if r.needs]
ANY_RULE_RE = re.compile("|".join(
    f"(?i:{r.regex.pattern})" if r.regex.flags & re.IGNORECASE else f"(?:{r.regex.pattern})"
    for r in RULES if r not in SCAN_RULES
))
DEATH_RULES = [r for r in RULES if r.kind == "crash"]
ANY_DEATH_RE = re.compile("|".join(f"(?:{r.regex.pattern})" for r in DEATH_RULES))

def match_rule(line: str) -> Rule | None:
    """The most specific rule matching the line (a capture failure that names an
    unsupported architecture is jit_arch, not oom)."""
    if not ANY_RULE_RE.match(line):
        for r in SCAN_RULES:  # (a loop, not a generator: this runs on every candidate line)
            if r.needs in line and r.regex.match(line):
                break
        else:
            return None
    best = None
    for rule in RULES:
        if (best is None or rule.prio < best.prio) and rule.regex.match(line):
            best = rule
    return best
