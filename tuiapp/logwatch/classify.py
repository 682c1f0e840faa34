"""One log record -> a failure finding (kind, message, signature), or nothing.

The families' rules (logwatch/families.py) are anchored at the start of a *candidate* line: the record's first message and
its unindented continuation lines (exception lines, multi-line error bodies, nvcc
output), with c10 ``[E... file.cpp:N]`` / ``[PG ... Rank N]`` tags and markdown a user
typed around a paste (`` ` ``, ``**``) stripped, plus the ``what():`` line of a C++
``terminate`` and the exception a wrapper names (``hit an exception: ValueError(...)``).
Indented traceback lines (source code) are never matched, and neither is text in the
middle of a message, so a logged prompt saying "out of memory", advice in a warning ("try
--mem-fraction-static") or the server_args dump raise nothing.

The kind follows the exception Python printed last, unless that one only wraps a more
specific cause ("Capture cuda graph failed" around an AssertionError, "hit an exception",
a build error around an unsupported architecture): then the most specific kind in the
record wins (the order of PRIORITY: oom first, crash last), and the message shown is the line that kind came from. A record without any
rule but whose head is an exception line (``RuntimeError: ...`` printed without a
``Traceback`` header) is a generic error.

A record that names a failure and also shows the process dying (``terminate called
after throwing ...``, ``Fatal Python error``) carries that death as ``Finding.death``: the
death of the server is always an incident of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tuiapp.logwatch.catalogue import known_error
from tuiapp.logwatch.families import (
    ANY_DEATH_RE,
    CRASH_PRIO,
    DEATH_RULES,
    PRIORITY,
    Rule,
    match_rule,
)
from tuiapp.logwatch.generic import (
    death_anywhere,
    generic_death,
    generic_error,
    might_fail,
    native_backtrace,
)
from tuiapp.logwatch.last_resort import last_resort, separate_marks
from tuiapp.logwatch.prefix import CPP_LOG_RE
from tuiapp.logwatch.quiet_exit import stops_quietly
from tuiapp.logwatch.thread_dump import thread_dump

EXC_RE = re.compile(
    r"((?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Fault|Failure|Warning))"
    r"(?:\([\w.]*\))?(?::\s*(.*))?$"
)
# an exception line a process printed on its own (no Traceback header): a CamelCase class
# name and a message, so "Error: ..." or "ERROR: ..." prose is not one
_BARE_EXC_RE = re.compile(
    r"(?:[a-z_]\w*\.)*(?:[A-Z][A-Za-z0-9]*(?:Error|Exception)|Exception)(?:\([\w.]*\))?: \S"
    # a class from a package's exceptions module, whatever its name ("torch._dynamo.exc.Unsupported: ...")
    r"|(?:[a-z_]\w*\.)+(?:exc|errors|exceptions)\.[A-Z]\w*: \S")
_TAGS_RE = re.compile(r"(?:\[(?:PG [^\]]*|Rank \d+)\] ?)+")
_MARKUP_RE = re.compile(r"^(?:`+|\*\*|> )+|(?:`+|\*\*)\s*$")
_WHAT_RE = re.compile(r"\s+what\(\):\s+")
_REPR_RE = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\((['\"])(.*)\2\)\s*$")
_WRAPPED_RE = re.compile(r"\w+ hit an exception: (?!Traceback)(.+)")
_GLOO_C10_RE = re.compile(r"\[[EF]\d{3,4} [\d:.]+ (?:\d+ )?ProcessGroupGloo\.cpp:\d+\]")
_XID_RE = re.compile(r"NVRM: Xid \(PCI:[\w:.]+\): (\d+)")
_TB_HEAD = "Traceback (most recent call last)"
# a traceback's header as Python, IPython ("RuntimeError     Traceback (most recent call last)") and Rich
# ("╭──── Traceback (most recent call last) ────╮") print it
_TB_HEADER_RE = re.compile(r"[\s╭─│]*(?:[\w.]+\s{2,})?Traceback \(most recent call last\)")


_GLOO_RULE = Rule("nccl", re.compile(""), prio=PRIORITY.index("nccl"))
_BARE_RULE = Rule("error", _BARE_EXC_RE, prio=PRIORITY.index("error"))
_HEADLESS_RULE = Rule("error", _BARE_EXC_RE, prio=PRIORITY.index("error"))
_FINAL_RULE = Rule("error", EXC_RE, prio=PRIORITY.index("error"))
# the generic layer (generic.py, catalogue.py): what no family knows is an error or a death
_GENERIC_RULE = Rule("error", re.compile(""), prio=PRIORITY.index("error"))
_GENERIC_DEATH_RULE = Rule("crash", re.compile(""), signature="crash", prio=CRASH_PRIO, specific=2)
# a thread dump without the report it was printed for (logwatch/thread_dump.py); any death line says more
_DUMP_RULES = {"hang": Rule("hang", re.compile(""), prio=PRIORITY.index("hang"), specific=0),
               "crash": Rule("crash", re.compile(""), signature="crash", prio=CRASH_PRIO, specific=0)}
_LAST_OOM_RULE = Rule("oom", re.compile(""), prio=PRIORITY.index("oom"))
# the last resort's kinds other than a generic error (last_resort.line_mark)
_LAST_RESORT_RULES = {"crash": _GENERIC_DEATH_RULE, "oom": _LAST_OOM_RULE,
                      "assertion": Rule("assertion", re.compile(""), prio=PRIORITY.index("assertion"))}
_NOT_A_FAILURE = ("WARNING", "Warning", "WARN", "INFO", "DEBUG", "NOTICE", "TRACE")
_FRAME = '  File "'
_C10_COLLECTIVE = " ProcessGroup"
_OLD_C10_RE = re.compile(r"\[([EF]) [\w.]+\.(?:cpp|cc|h):\d+\] ")  # c10 before it printed the date
_GROUP_HEAD = "Exception Group Traceback"

_RANK_RES = [
    re.compile(r"^Subprocess scheduler_(\d+) "),
    re.compile(r"\bRank (\d+) scheduler (?:died|is dead)"),
    re.compile(r"\bRank (\d+)\]"),
    re.compile(r"^(?:\d{4}-\d\d-\d\d[ T][\d:.,]+ )?\S+:\d+:\d+ \[(\d+)\] (?:[\w./-]+:\d+ )?NCCL "),
    re.compile(r"^(?:Decode|Prefill|Encode|Embedding) \w+ failed for request rank=(\d+) "),
]
_MAX_MESSAGE = 1000
_WRAP_MIN = 60  # a line a terminal wrapped filled its width


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
    line_index: int = 0  # which line of the record the message came from
    specific: int = 1  # crash findings: how much the message says about the death
    death: Finding | None = None  # the same record also shows the process dying
    # a consequence of another failure, joining that incident if one is open: "cause" (a c10
    # line after the collective it reports, the launcher's EOFError after a death, a 500
    # answered for it), "death" (what the generic layer read, within a death's aftermath:
    # the launcher's diagnostics after a child died)
    knock_on: str = ""
    generic: bool = False  # read by the generic layer: a burst of such lines is one incident
    # other lines of the record that the generic layer or the last resort read as failures of their own
    apart: list[int] = field(default_factory=list)
    # a native backtrace without its head: part of the failure that follows it at once, if one does
    fragment: bool = False


def clean(line: str) -> str:
    """A candidate line without c10 logging, PG/rank tags and a user's markdown."""
    if line.startswith("["):
        m = CPP_LOG_RE.match(line)
        if m:
            line = line[m.end():]
        m = _TAGS_RE.match(line)
        if m:
            line = line[m.end():]
    elif line.startswith(("`", "*", ">")) or line.endswith(("`", "*")):
        line = _MARKUP_RE.sub("", line)
    return line


def normalise(message: str) -> str:
    """Same failure on other ranks -> same text: drop the type, numbers and addresses."""
    m = EXC_RE.match(message)
    text = m.group(2) or m.group(1) if m else message
    text = re.sub(r"0x[0-9a-fA-F]+", "x", text.lower())
    text = re.sub(r"\d+", "n", text)
    return " ".join(text.split())[:200]


def _unrepr(text: str) -> str:
    """``OutOfMemoryError('CUDA out of memory...')`` -> ``OutOfMemoryError: CUDA out of memory...``"""
    m = _REPR_RE.match(text)
    return f"{m.group(1)}: {m.group(3)}" if m else text


def candidates(body: list[str]) -> list[tuple[int, str]]:
    """(line index, cleaned text) of the lines rules may match."""
    if not body:
        return []
    head = body[0]
    if head[:1].isspace() and _WHAT_RE.match(head):  # a terminate's what() line opens the record
        head = _WHAT_RE.sub("", head, count=1)
    out = [(0, clean(head))]
    for i in range(1, len(body)):
        line = body[i]
        if not line:
            continue
        if not line[0].isspace():
            out.append((i, clean(line)))
        elif line[1:2] == " " and _WHAT_RE.match(line):
            out.append((i, clean(_WHAT_RE.sub("", line, count=1))))
    wrapped = [(i, m.group(1)) for i, c in out if "hit an exception: " in c and (m := _WRAPPED_RE.match(c))]
    out += wrapped
    # a cause printed as a repr reads as the exception line it stands for
    return [(i, _unrepr(c)) if ("('" in c or '("' in c) else (i, c) for i, c in out]


def final_exception(body: list[str]) -> tuple[int, str] | None:
    """The last exception line after a "Traceback" header (the one Python prints last)."""
    seen_tb = False
    last = None
    for i, line in enumerate(body):
        if not line:
            continue
        if line[0].isspace():
            # a traceback that lost its head (a paste, a log that starts mid-traceback)
            seen_tb = seen_tb or line.startswith(_FRAME)
            continue
        if _TB_HEAD in line:
            seen_tb = True
            continue
        if seen_tb:
            c = clean(line)
            if EXC_RE.match(c):
                last = (i, c)
    return last


def _ranks(body: list[str]) -> list[int]:
    ranks: list[int] = []
    for line in body:
        for rx in _RANK_RES:
            m = rx.search(line)
            if m:
                r = int(m.group(1))
                if r not in ranks:
                    ranks.append(r)
                break
    return ranks


def _exc_name(line: str) -> str:
    m = EXC_RE.match(line)
    return m.group(1) if m else ""


def _wrapped_line(body: list[str]) -> tuple[float, Rule, int, str] | None:
    """A long line a terminal wrapped into several (a pasted capture): the rules see it whole."""
    for i in range(min(len(body), 64) - 1):
        line, nxt = body[i], body[i + 1]
        # (a wrap may leave the next piece starting with the space it broke at; an
        # indented line is a traceback frame, not a piece)
        if len(line) < _WRAP_MIN or not nxt or nxt[:2].isspace() or nxt[0] == "\t" or (i and line[0].isspace()):
            continue
        joined = clean(line) + nxt
        rule = match_rule(joined)
        if rule is not None and not match_rule(clean(line)):
            return (rule.prio, rule, i, joined)
    return None


def _ungroup(body: list[str]) -> list[str]:
    """An exception group's ``| ``-drawn tracebacks as plain ones (the sub-exception printed
    last is the one shown)."""
    out = []
    for line in body:
        s = line.lstrip()
        if s.startswith(("+-", "+=")):
            out.append("")
            continue
        if s.startswith(("| ", "+ ")) or s == "|":
            while s.startswith(("| ", "+ ")):
                s = s[2:]
            line = "" if s == "|" else s
        out.append(line)
    return out


# a request the server turned down as the client's mistake (a 400) is not a server failure
_CLIENT_ERROR_RE = re.compile(
    r".*(?:is longer than the model's (?:context|maximum)|exceeds the maximum allowed|[Ii]nput length \(|"
    r"max_(?:new_)?tokens|[Ii]nvalid request|[Bb]ad [Rr]equest|[Uu]nsupported (?:value|parameter|model))")
_KNOCK_ON_EXC = ("EOFError", "BrokenPipeError", "ConnectionResetError", "ConnectionRefusedError")


def _knock_on_traceback(body: list[str], message: str) -> bool:
    """The launcher's or the web server's traceback after a death: a pipe to a dead child
    (EOFError and friends), or the HTTP server's lifespan failing because start-up did."""
    if message.startswith(_KNOCK_ON_EXC):
        return True
    return any(b.startswith(_FRAME) and b.endswith(", in lifespan") for b in body)


# IPython's frames: "File /x/y.py:686, in PeftModel.load_adapter(self, ...)", in a notebook's export
# "File [/x/y.py:195](https://...), in f(...)"; the line it was at is marked "--> 195"
_IPY_FRAME_RE = re.compile(r"\s*File \[?/?[^\s\]]*\.py:\d+(?:\]\([^)\s]*\))?, in \S")
_IPY_ARROW_RE = re.compile(r"-+> *\d+ ")
_STRICT_FRAME_RE = re.compile(r'\s*File "[^"]+", line \d+, in \S')
_RELAYED_FRAME_RE = re.compile(r'\S[:|\]]? +File "[^"]+", line \d+, in \S')


def _starts_mid_traceback(body: list[str]) -> bool:
    """The record starts inside a traceback: an indented head (a frame, a caret line), a frame a paste
    moved to column 0, or a short caption the user wrote ("error msg:") right above the first frame."""
    head = body[0]
    if head[:1].isspace() or head.startswith('File "'):
        return True
    # (or rows of dots standing for the frames left out)
    if len(head) >= 60 or head[:1] == "[" or not (head.rstrip().endswith(":") or _is_dots(head)):
        return False
    for b in body[1:4]:
        if b.lstrip().startswith('File "'):
            return True
        if not _is_dots(b):
            return False
    return False


def _is_dots(line: str) -> bool:
    s = line.strip()
    return bool(s) and s.strip(".…") == ""


def _headless_exception(body: list[str], cands: list[tuple[int, str]]) -> tuple[float, Rule, int, str] | None:
    """A record that starts mid-traceback (or holds a frame below a line of its own) and whose
    exception line was printed on its own further down."""
    mid = _starts_mid_traceback(body)
    first_frame = None if mid else next((i for i, b in enumerate(body[:64]) if _STRICT_FRAME_RE.match(b)), None)
    if not mid and first_frame is None:
        return None
    for idx, line in reversed(cands[1:]):
        if first_frame is not None and idx <= first_frame:
            break
        if _BARE_EXC_RE.match(line):
            if stops_quietly(_exc_name(line), line):
                return None
            return (_HEADLESS_RULE.prio, _HEADLESS_RULE, idx, line)
    return None


def _cut_traceback(body: list[str], has_tb: bool) -> tuple[float, Rule, int, str] | None:
    """A traceback that ends before its exception line (a paste, a log cut short, a process
    killed mid-print): still a failure; its last frame says where. Without its "Traceback"
    header too (a log that starts mid-traceback) it takes two frames."""
    # (a paste that lost every indent starts with its frame at column 0)
    headless = _starts_mid_traceback(body)
    if not has_tb and not headless:
        if body[0].startswith("File ") and _IPY_FRAME_RE.match(body[0]) and any(
                _IPY_ARROW_RE.match(b) for b in body[1:64]):
            # IPython's frame with the arrow at the line it was on
            return (_GENERIC_RULE.prio, _GENERIC_RULE, 0, body[0].strip())
        return None
    frames = [i for i, b in enumerate(body) if b.lstrip().startswith('File "')]
    if not frames and headless and not has_tb:
        # a traceback another process relayed with its own prefix on each line ("<ts> DEBUG
        # runner::subprocess:   File ..."), in a paste indented as a whole
        frames = [i for i, b in enumerate(body[:64]) if 'File "' in b and _RELAYED_FRAME_RE.search(b)]
        if len(frames) < 2:
            return None
        return (_GENERIC_RULE.prio, _GENERIC_RULE, frames[-1], body[frames[-1]].strip())
    if not frames:
        # only the header made it (the log ends there, or the rest went elsewhere)
        head = next((i for i, b in enumerate(body) if _TB_HEADER_RE.match(b)), None) if has_tb else None
        return None if head is None else (_GENERIC_RULE.prio, _GENERIC_RULE, head, body[head].strip())
    # (faulthandler's thread dumps, "line N in f" without the comma, are not tracebacks)
    if not has_tb and not (headless and sum(1 for i in frames if ", in " in body[i]) >= 2):
        return None
    return (_GENERIC_RULE.prio, _GENERIC_RULE, frames[-1], body[frames[-1]].strip())


def _native(body: list[str]) -> tuple[float, Rule, int, str] | None:
    """A native backtrace no family reads (c10's frame dump, systemd-coredump's report), unless
    the record is a warning that carries one (c10 prints a retried TCPStore connect with its
    frames at level W)."""
    head = body[0]
    if head.lstrip().startswith(_NOT_A_FAILURE) or (
            head[:1] == "[" and (m := CPP_LOG_RE.match(head) or _OLD_C10_RE.match(head)) is not None
            and m.group(1) not in "EF"):
        return None
    found = native_backtrace(body)
    if found is None:
        return None
    rule = _GENERIC_DEATH_RULE if found[0] == "crash" else _GENERIC_RULE
    return (rule.prio, rule, found[1], body[found[1]].strip())


def _generic(body: list[str], cands: list[tuple[int, str]]) -> tuple[float, Rule, int, str] | None:
    """The generic layer: a record no family knows that still reports a failure."""
    if "NVRM: " in body[0]:
        # the driver's multi-line reports continue on indented "NVRM: " lines
        cands = cands + [(i, b.strip()) for i, b in enumerate(body) if i and b[:1].isspace() and "NVRM: " in b]
    for idx, line in cands:
        line = line.lstrip()  # a paste indented as a whole
        if not line or line.startswith(_NOT_A_FAILURE):
            continue
        raw = body[idx]
        suspect = might_fail(line)
        if suspect and (generic_death(line) or (raw[:1] in "*>`" and generic_death(raw.strip()))):  # "***" is no markdown
            return (_GENERIC_DEATH_RULE.prio, _GENERIC_DEATH_RULE, idx, line)
        if raw[:1] == "[" and (m := CPP_LOG_RE.match(raw) or _OLD_C10_RE.match(raw)) is not None and m.group(1) in "EF":
            # c10's own error level; the process group's lines belong to the collective burst
            return (_GLOO_RULE.prio, _GLOO_RULE, idx, line) if _C10_COLLECTIVE in m.group(0) else (
                _GENERIC_RULE.prio, _GENERIC_RULE, idx, line)
        if ((suspect and generic_error(line)) or known_error(line)) and not _CLIENT_ERROR_RE.match(line):
            return (_GENERIC_RULE.prio, _GENERIC_RULE, idx, line)
    for idx, b in enumerate(body[:64]):
        if ("Reason:" in b or "__terminate" in b or "Back-off" in b or "Exit Code:" in b) and death_anywhere(b):
            return (_GENERIC_DEATH_RULE.prio, _GENERIC_DEATH_RULE, idx, b.strip())
    return None


def _last_resort(body: list[str]) -> tuple[float, Rule, int, str] | None:
    """The marks of a failure anywhere in a line of a format no rule knows (last_resort.py)."""
    found = last_resort(body)
    if found is None:
        return None
    rule = _LAST_RESORT_RULES.get(found[0], _GENERIC_RULE)
    line = body[found[1]].strip()
    return None if _CLIENT_ERROR_RE.match(line) else (rule.prio, rule, found[1], line)


def classify(body: list[str]) -> Finding | None:
    """The record's finding, None for an ordinary line."""
    if len(body) > 2 and any(_GROUP_HEAD in b for b in body):
        body = _ungroup(body)
    cands = candidates(body)
    if not cands or cands[0][1].startswith("Exception ignored in"):
        return None  # interpreter-shutdown noise from __del__
    best: tuple[float, Rule, int, str] | None = None
    death: tuple[int, Rule, int, str] | None = None
    native = False
    one_line = None  # read from one line of the record: other lines may be failures of their own
    for idx, line in cands:
        rule = match_rule(line)
        if rule is None:
            continue
        if ANY_DEATH_RE.match(line):
            drule = next(r for r in DEATH_RULES if r.regex.match(line))
            if death is None or drule.specific > death[0]:
                death = (drule.specific, drule, idx, line)
        if best is None or rule.prio < best[0]:
            best = (rule.prio, rule, idx, line)
    if (best is None or best[1].wrapper) and len(body) > 1:
        best = _wrapped_line(body) or best
    if best is None and body[0].startswith("[") and _GLOO_C10_RE.match(body[0]):
        best = (_GLOO_RULE.prio, _GLOO_RULE, 0, cands[0][1])
    has_tb = any(_TB_HEAD in b for b in body)
    final = final_exception(body) if has_tb or (len(body) > 1 and any(b.startswith(_FRAME) for b in body)) else None
    if final is not None:
        # the kind follows the exception printed last, unless it only wraps its cause
        frule = match_rule(final[1])
        if frule is not None and (
                (frule.kind != "crash" and not frule.wrapper)
                or (frule.kind == "crash" and (best is None or best[1].wrapper or best[1].kind == "crash"))):
            best = (frule.prio, frule, final[0], final[1])
    if best is None:
        head = cands[0][1]
        if final is None and _BARE_EXC_RE.match(head):
            if stops_quietly(_exc_name(head), head):
                return None
            best = (_BARE_RULE.prio, _BARE_RULE, 0, head)
        elif final is None:
            best = one_line = _generic(body, cands)
            best = best or (
                _headless_exception(body, cands) or _cut_traceback(body, has_tb) if len(body) > 1 or has_tb else None)
            if best is None and len(body) > 1:
                best = _native(body)
                native = best is not None
            if best is None and len(body) > 1 and (dump := thread_dump(body)) is not None:
                rule = _DUMP_RULES[dump[0]]
                best = (rule.prio, rule, dump[1], body[dump[1]].strip())
                native = True  # printed for a failure, as a native backtrace is
            if best is None:
                best = one_line = _last_resort(body)
            if best is None:
                return None
        else:
            if stops_quietly(_exc_name(final[1]), final[1]):
                return None
            best = (_FINAL_RULE.prio, _FINAL_RULE, final[0], final[1])
    _, rule, idx, matched = best
    if rule.kind == "error" and final is not None:
        if stops_quietly(_exc_name(final[1]), final[1]):
            return None  # "Scheduler hit an exception: ... KeyboardInterrupt" on Ctrl-C
        idx, matched = final  # a generic error: the exception Python printed last says what it was
    message = matched.strip()[:_MAX_MESSAGE]
    ranks = _ranks(body)
    # NCCL failures come as bursts of differently worded lines (NCCL WARN, c10 watchdog,
    # terminate/what(), DistBackendError tracebacks): one incident per burst.
    signature = "nccl" if rule.kind == "nccl" else rule.signature or f"{rule.kind}:{normalise(message)}"
    if rule.kind == "xid":
        m = _XID_RE.search(message)
        if m:  # the dmesg/journal time goes; the code makes the incident
            message, signature = message[m.start():], f"xid:{m.group(1)}"
    aliases: list[str] = []
    if rule.kind != "nccl" and rule.signature is None:
        for _, c in cands:
            if EXC_RE.match(c):
                alias = f"{rule.kind}:{normalise(c)}"
                if alias != signature and alias not in aliases:
                    aliases.append(alias)
    incomplete = rule.kind == "error" and final is None and has_tb
    f = Finding(rule.kind, rule.severity, message, signature, ranks, final is not None, aliases, incomplete,
                idx, rule.specific)
    if (rule is _GLOO_RULE and idx < len(body) and _C10_COLLECTIVE in body[idx][:80]) or rule.kind == "request" or (
            rule.kind == "error" and _knock_on_traceback(body, message)):
        f.knock_on = "cause"
    elif rule is _GENERIC_RULE or rule is _HEADLESS_RULE:
        f.knock_on = "death"
    f.generic = rule is _GENERIC_RULE or rule is _HEADLESS_RULE
    if native:
        # a native backtrace is printed for a failure: it joins one open before it, and
        # without its head ("Exception raised from ...") one that follows it at once
        dumped = rule in _DUMP_RULES.values()
        f.knock_on = "cause" if f.kind == "error" or dumped else f.knock_on
        f.fragment = (f.kind == "error" or dumped) and not body[idx].lstrip().startswith("Exception raised from ")
    if death is None and rule.kind != "crash" and len(body) > 2:
        # a death the record shows beside its failure in a form no death rule reads on a candidate line
        # (a container's last state in `kubectl describe`, indented under its pod)
        for i, b in enumerate(body[:64]):
            if ("Exit Code:" in b or "Reason:" in b or "Back-off" in b or "__terminate" in b) and i != idx and death_anywhere(b):
                death = (1, _GENERIC_DEATH_RULE, i, b)
                break
    if one_line is not None and len(body) > 1:
        f.apart = separate_marks(body, idx)
    if death is not None and rule.kind != "crash":
        _, drule, didx, dline = death
        f.death = Finding("crash", "error", dline.strip()[:_MAX_MESSAGE], "crash", list(ranks),
                          line_index=didx, specific=drule.specific)
    return f
