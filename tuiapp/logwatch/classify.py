"""One log record -> a failure finding (kind, message, signature), or nothing.

Rules are anchored at the start of a *candidate* line: the record's first message and
its unindented continuation lines (exception lines, multi-line error bodies, nvcc
output), with c10 ``[E... file.cpp:N]`` / ``[PG ... Rank N]`` tags stripped. Indented
traceback lines (source code) are never matched, and neither is text in the middle of a
message, so a logged prompt saying "out of memory", advice in a warning ("try
--mem-fraction-static") or the server_args dump raise nothing.

When several rules match one record the most specific kind wins (oom > nccl > jit_arch >
keyerror > assertion > hang > kv_pressure > error > crash): a CUDA-graph capture failure
caused by an AssertionError is an assertion; one caused by OOM is an oom.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tuiapp.logwatch.prefix import CPP_LOG_RE

EXC_RE = re.compile(
    r"((?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Fault|Failure|Warning))(?::\s*(.*))?$"
)
_QUIET_EXC = {"KeyboardInterrupt", "SystemExit", "CancelledError", "asyncio.CancelledError",
              "asyncio.exceptions.CancelledError", "GeneratorExit"}
_TAGS_RE = re.compile(r"(?:\[(?:PG [^\]]*|Rank \d+)\] ?)+")
_E = r"[\w.]*(?:Error|Exception): "  # an exception line's type
_TB_HEAD = "Traceback (most recent call last)"


PRIORITY = ["oom", "nccl", "jit_arch", "keyerror", "assertion", "hang", "kv_pressure", "error", "crash"]


@dataclass(slots=True)
class Rule:
    kind: str
    regex: re.Pattern[str]
    severity: str = "error"
    signature: str | None = None  # fixed signature: one incident whatever the text
    prio: float = 0.0


def _r(kind: str, pattern: str, severity: str = "error", signature: str | None = None,
       flags: int = 0, prio: float | None = None) -> Rule:
    return Rule(kind, re.compile(pattern, flags), severity, signature,
                PRIORITY.index(kind) if prio is None else prio)

RULES: list[Rule] = [
    _r("oom", r"(?:torch\.)?(?:cuda\.)?OutOfMemoryError\b"),
    _r("oom", _E + r".*\bCUDA (?:error: )?out of memory"),
    _r("oom", _E + r"Not enough memory\b"),
    _r("oom", r"(?:" + _E + r")?(?:Prefill|Decode) out of memory\."),  # not "...memory happened"
    # a capture failure is an oom unless its cause names something more specific
    # (FlashInfer JIT arch, NCCL invalid usage, an assertion)
    _r("oom", _E + r".*\bCapture (?:cuda graph|[\w ]*CUDA graph) failed", prio=PRIORITY.index("error") - 0.5),
    _r("oom", _E + r".*CUBLAS_STATUS_ALLOC_FAILED"),
    _r("oom", r"\S+:\d+:\d+ \[\d+\] NCCL WARN .*out of memory"),
    _r("nccl", r"Watchdog caught collective operation timeout"),
    _r("nccl", r"(?:[\w.]+\.)?DistBackendError\b"),
    _r("nccl", _E + r".*\bNCCL (?:error|communicator was aborted)"),
    _r("nccl", r"terminate called after throwing an instance of 'c10::DistBackendError'"),
    _r("nccl", r"what\(\):.*(?:collective operation timeout|NCCL error)"),
    _r("nccl", r"Process group watchdog thread terminated with exception: .*(?:timeout|NCCL)"),
    # NCCL's own WARN level: real failures follow with an error (traceback, c10 watchdog)
    # that joins the same incident and makes it an error; a WARN at shutdown stays a warning
    _r("nccl", r"\S+:\d+:\d+ \[\d+\] NCCL WARN\b", "warning"),
    _r("nccl", r"\S+:\d+:\d+ \[\d+\] NCCL ERROR\b"),
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
    _r("error", r"\w+ hit an exception\b"),
    _r("error", r"Initialization failed\. warmup error"),
    _r("error", r"[\w.-]+\.py: error: "),  # argparse: unrecognized/ambiguous option
    _r("error", r"ERROR:\s+\[Errno \d+\] "),  # uvicorn: e.g. the port is taken
    _r("crash", r"Received sigquit from a child process", signature="crash"),
    _r("crash", r"SIGQUIT received\.", signature="crash"),
    _r("crash", r"Subprocess \S+ \(pid=\d+\) crashed with exit code -?\d+", signature="crash"),
    _r("crash", r"Rank \d+ scheduler died during initialization", signature="crash"),
    _r("crash", r"Initialization failed\. Please see the error messages above", signature="crash"),
    _r("crash", r"Fatal Python error: (?:Aborted|Segmentation fault)", signature="crash"),
    _r("crash", r"(?:.*\bline \d+: +\d+ Killed\b|Killed\s*$)", signature="crash"),
    _r("crash", r"Segmentation fault \(core dumped\)", signature="crash"),
]
# One pass over all rules for the common case of an ordinary line.
_ANY_RULE_RE = re.compile("|".join(
    f"(?i:{r.regex.pattern})" if r.regex.flags & re.IGNORECASE else f"(?:{r.regex.pattern})"
    for r in RULES
))

_RANK_RES = [
    re.compile(r"^Subprocess scheduler_(\d+) "),
    re.compile(r"^Rank (\d+) scheduler died"),
    re.compile(r"\bRank (\d+)\]"),
    re.compile(r"^\S+:\d+:\d+ \[(\d+)\] NCCL "),
]
_MAX_MESSAGE = 1000


@dataclass(slots=True)
class Finding:
    kind: str
    severity: str
    message: str
    signature: str
    ranks: list[int] = field(default_factory=list)  # named in the text (scheduler_3, [Rank 3])
    has_traceback: bool = False
    # the other exception lines of a chained traceback: the same failure seen through
    # its cause (when a traceback arrives in pieces) is still the same incident
    aliases: list[str] = field(default_factory=list)
    incomplete: bool = False  # a traceback that never showed its exception line


def clean(line: str) -> str:
    """A candidate line without c10 logging and PG/rank tags."""
    if line.startswith("["):
        m = CPP_LOG_RE.match(line)
        if m:
            line = line[m.end():]
        m = _TAGS_RE.match(line)
        if m:
            line = line[m.end():]
    return line


def normalise(message: str) -> str:
    """Same failure on other ranks -> same text: drop the type, numbers and addresses."""
    m = EXC_RE.match(message)
    text = m.group(2) or m.group(1) if m else message
    text = re.sub(r"0x[0-9a-fA-F]+", "x", text.lower())
    text = re.sub(r"\d+", "n", text)
    return " ".join(text.split())[:200]


def candidates(body: list[str]) -> list[str]:
    out = [clean(body[0])] if body else []
    for line in body[1:]:
        if line and not line[0].isspace():
            out.append(clean(line))
    return out


def final_exception(body: list[str]) -> str | None:
    """The last exception line after a "Traceback" header (the one Python prints last)."""
    seen_tb = False
    last = None
    for line in body:
        if not line or line[0].isspace():
            continue
        if _TB_HEAD in line:
            seen_tb = True
            continue
        if seen_tb:
            c = clean(line)
            if EXC_RE.match(c):
                last = c
    return last


def classify(body: list[str]) -> Finding | None:
    """The record's finding, None for an ordinary line."""
    cands = candidates(body)
    if not cands or cands[0].startswith("Exception ignored in"):
        return None  # interpreter-shutdown noise from __del__
    best: tuple[int, Rule, str] | None = None
    for line in cands:
        if not _ANY_RULE_RE.match(line):
            continue
        for rule in RULES:
            if rule.regex.match(line):
                if best is None or rule.prio < best[0]:
                    best = (rule.prio, rule, line)
                break
    final = final_exception(body) if any(_TB_HEAD in b for b in body) else None
    if best is None:
        if final is None:
            return None
        exc_m = EXC_RE.match(final)
        exc_name = exc_m.group(1) if exc_m else ""
        if exc_name in _QUIET_EXC or exc_name.endswith("Warning"):
            return None
        best = (PRIORITY.index("error"), Rule("error", EXC_RE, prio=PRIORITY.index("error")), final)
    _, rule, matched = best
    if rule.kind == "error" and final is not None:
        exc_m = EXC_RE.match(final)
        if exc_m and exc_m.group(1) in _QUIET_EXC:
            return None  # "Scheduler hit an exception: ... KeyboardInterrupt" on Ctrl-C
    # The exception Python printed last names the failure; a tool's line (nvcc, c10) or a
    # logged message is the better human line when no exception line matched.
    use_final = final is not None and (rule.kind == "error" or EXC_RE.match(matched) is not None)
    message = final if use_final else matched
    message = message.strip()[:_MAX_MESSAGE]
    ranks: list[int] = []
    for line in body:
        for rx in _RANK_RES:
            m = rx.search(line)
            if m:
                r = int(m.group(1))
                if r not in ranks:
                    ranks.append(r)
                break
    # NCCL failures come as bursts of differently worded lines (NCCL WARN, c10 watchdog,
    # terminate/what(), DistBackendError tracebacks): one incident per burst.
    signature = "nccl" if rule.kind == "nccl" else rule.signature or f"{rule.kind}:{normalise(message)}"
    aliases: list[str] = []
    if rule.kind != "nccl" and rule.signature is None:
        for c in cands:
            if EXC_RE.match(c):
                alias = f"{rule.kind}:{normalise(c)}"
                if alias != signature and alias not in aliases:
                    aliases.append(alias)
    incomplete = rule.kind == "error" and final is None and any(_TB_HEAD in b for b in body)
    return Finding(rule.kind, rule.severity, message, signature, ranks, final is not None, aliases, incomplete)
