"""The log watcher: server output bytes -> LogLine, ServerStats, ServerState, Alert events.

Envelopes. Each line first loses what a log collector wrapped around it (docker -t,
compose, kubectl --prefix, journald, cloud exports, ANSI colours, Ray actor tags; see
envelope.py), decided from the stream's first lines; LogLine text and tracebacks keep the
line as it arrived.

Records. A line with SGLang's ``[ts ... TPn]`` prefix starts a record; unprefixed lines
after it are its continuation (tracebacks are one logging record with embedded newlines),
except lines that are plainly their own thing: tqdm bars ("\\r"), NCCL INFO/WARN, Gloo,
Python warnings, a fresh ``Traceback`` from a process that died without logging. PyTorch
``[rankN]:`` lines form one stream per rank. When ranks interleave, a traceback cut off by
another rank's line stays *pending* for TB_WAIT_S and collects the frames that follow.

Latency. A record is finished (published, classified) as soon as the next record starts,
or when it has been idle for IDLE_S; call ``poll`` on a timer (``pump`` and
``follow_file`` do). A traceback still missing its exception line, or a message ending
in ":", waits up to TB_WAIT_S. If the rest of a record still comes after it was finished
(a stalled writer), that rest keeps its ranks and joins the same incident.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from tuiapp.events import LogLine, ServerState, ServerStats
from tuiapp.logwatch.batchstats import parse_batch_line
from tuiapp.logwatch.classify import (
    _BARE_EXC_RE,
    _TB_HEAD,
    EXC_RE,
    Finding,
    classify,
)
from tuiapp.logwatch.envelope import EnvelopeDetector
from tuiapp.logwatch.families import ARGPARSE_ERROR, NVSHMEM_SOURCE_LINE
from tuiapp.logwatch.generic import RECORD_START_RE
from tuiapp.logwatch.grouping import AlertGrouper
from tuiapp.logwatch.lines import Line, LineSplitter
from tuiapp.logwatch.prefix import (
    CPP_LOG_RE,
    KERNEL_LINE_PREFIX,
    TORCH_RANK_RE,
    epoch_s,
    parse_c10_prefix,
    parse_logger_prefix,
    parse_sglang_prefix,
)
from tuiapp.logwatch.record import Record
from tuiapp.server.output import READY_LINE

IDLE_S = 0.03
TB_WAIT_S = 1.0
MAX_RECORD_LINES = 2000
POLL_S = 0.02
# A record whose finishing can raise nothing (a statistics line, a request's access-log line,
# a progress bar: only its LogLine, which the relay holds for its 1 s tick anyway) is not
# worth a wake-up of its own at IDLE_S: the output thread looks at it after this long, or
# when the next line comes (records quiet for IDLE_S by then are finished first, so the
# records and their order are those of a poll at IDLE_S). The steady state's lone Decode and
# access-log lines each cost a read and a quiet wake-up before.
UNALARMING_WAIT_S = 0.5
READY_TEXT = READY_LINE.decode()
_TB_HEADS = (_TB_HEAD, "Exception Group Traceback")
_CHAIN_MARKERS = ("The above exception was the direct cause", "During handling of the above exception")

_STANDALONE_RE = re.compile(
    r"\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|ERROR)\b"  # host:pid:tid [dev] NCCL ...
    r"|\[Gloo\]"
    r"|\S+\.py:\d+: \w*Warning: "  # warnings.warn output
    r"|(?:INFO|WARNING|ERROR|DEBUG):\s{2,}"  # uvicorn without SGLang's formatter
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.-]+:\d+\] "  # glog (Mooncake, NIXL): one line each
)
# kernel lines (dmesg, a journal) fed through --log-cmd: each its own record. Like the
# patterns below, tried only when a cheap substring test says the line may be one: these
# regexes ran on every unprefixed line (tracebacks, frame dumps) and cost ~5% of feed time.
_NVRM_RE = re.compile(KERNEL_LINE_PREFIX + "NVRM: ")
# dmesg's own stamp, seconds since boot ("[ 2480.727732] amdgpu ..."): the kernel prints a line at a time,
# and lines of different reports (a ring timeout, a page fault 80 s later) must not join one record
_DMESG_RE = re.compile(r"\[\s*(\d+\.\d{6})\] ")
# Unprefixed lines that begin output of their own (a dying process, the C++ runtime)
# rather than continue the record before them.
_RAW_START_RE = re.compile(
    r"terminate called after throwing|Fatal Python error:|Segmentation fault|Killed\s*$"
    r"|Process \w+-\d+:$|Exception ignored in|usage: |\[[EF] \w+\.cpp:\d+\] "
)
_ARGPARSE_RE = re.compile(ARGPARSE_ERROR)
_NOT_A_START = " \t\n"
_NVSHMEM_RE = re.compile(NVSHMEM_SOURCE_LINE)
# A record glued after a progress bar that ended without "\r" (a pasted terminal capture).
_GLUED_RE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_ACCESS_LOG = "INFO:     "  # uvicorn's access log: one line per request
_HTTP_500 = '" 500 '  # ...a failure only when the server answered 500
# SGLang's --log-requests lines: the request as the client sent it, and its output
_REQUEST_ECHOES = ("Receive: obj=", "Finish: obj=")
_SHUTDOWN_RE = re.compile(r"SIGTERM received\b|Received SIGTERM\b")
_WARN_RE = re.compile(
    r"(?:WARNING|Warning|WARN)\b|\S+\.py:\d+: \w*Warning: |Setup Custom allreduce failed"
    r"|TorchSymmMemCommunicator: "
)
_DEPRECATED = " is deprecated"  # anywhere in the line: a substring test, not a ".*" scan of every record


class LogWatcher:
    """Feed it raw bytes; it publishes events. ``feed``/``poll``/``flush`` may be called
    from different threads (a lock serialises them), e.g. a pipe reader and a timer."""

    def __init__(self, publish: Callable[[Any], None], *, group_window_s: float = 2.0,
                 idle_s: float = IDLE_S, log_lines: bool = True, ready_events: bool = True) -> None:
        self._publish = publish
        self._log_lines = log_lines  # False: no LogLine events (logscan needs only the summary)
        self._ready_events = ready_events  # False: the launcher reports readiness itself
        self.idle_s = idle_s
        self._lines = LineSplitter()
        self._env = EnvelopeDetector()  # the collector's wrapping, decided from the first lines
        self._year: int | None = None  # of the last dated SGLang line (c10 times have none)
        self._month = 0
        self._day = -1  # the date those were read from (epoch days)
        self._open: Record | None = None
        self._rank_open: dict[int, Record] = {}
        self._pending: list[Record] = []
        # a native backtrace that lost its head, held until the next record says whether a
        # failure follows it at once (then it was an earlier print of that failure's dump)
        self._fragment: tuple[Record, Finding, str] | None = None
        self._last_closed: Record | None = None
        self._grouper = AlertGrouper(publish, group_window_s)
        self.ready = False
        self.decode_lines = 0
        self._gen_by_dp: dict[int | None, float] = {}
        self._accept_by_dp: dict[int | None, float] = {}
        self._lock = threading.RLock()
        self._poller_wake: Callable[[], None] | None = None  # set while run_poller sleeps
        # Someone finishes quiet records by the clock (poll / quiet_in_s): a feed then first
        # finishes those already quiet. Never for a file read at once (logscan): its
        # records end where the next begins, whatever the time between two reads.
        self._timed = False

    # ------------------------------------------------------------ input

    def feed(self, data: bytes, now_s: float | None = None) -> None:
        wall = time.monotonic() if now_s is None else now_s
        with self._lock:
            if self._timed and self.has_open():
                self._poll(self._quiet_at(wall))  # what a poll at IDLE_S would have finished
            for line in self._lines.feed(data):
                self._on_line(line, wall)
            if self._poller_wake is not None and self.has_open():
                wake, self._poller_wake = self._poller_wake, None
                wake()

    def flush(self, now_s: float | None = None) -> None:
        """End of stream: finish the last line and every open record."""
        wall = time.monotonic() if now_s is None else now_s
        with self._lock:
            for line in self._lines.flush():
                self._on_line(line, wall)
            done = list(self._rank_open.values()) + self._pending
            if self._open is not None:
                done.append(self._open)
            self._open = None
            self._rank_open.clear()
            self._pending = []
            self._finish_in_order(done)
            self._release_fragment()

    def restart(self) -> None:
        """The file was truncated or rotated: finish what we have, count lines from 1."""
        with self._lock:
            self.flush()
            self._lines.reset()
            self._env = EnvelopeDetector()
            self._last_closed = None

    def poll(self, now_s: float | None = None) -> None:
        """Finish records that have gone quiet; call every ~20 ms."""
        now = time.monotonic() if now_s is None else now_s
        with self._lock:
            self._timed = True
            self._poll(self._quiet_at(now))

    def _quiet_at(self, now: float) -> Callable[[Record], bool]:
        def quiet(rec: Record) -> bool:
            idle = now - rec.last_wall
            return idle >= TB_WAIT_S or (not rec.waiting and idle >= self.idle_s)

        return quiet

    def _poll(self, quiet: Callable[[Record], bool]) -> None:
        done: list[Record] = []
        cur = self._open
        if cur is not None and quiet(cur):
            self._open = None
            done.append(cur)
        for rank, rec in list(self._rank_open.items()):
            if quiet(rec):
                del self._rank_open[rank]
                done.append(rec)
        if self._pending:
            done += [rec for rec in self._pending if quiet(rec)]
            self._pending = [rec for rec in self._pending if not quiet(rec)]
        if done:
            self._finish_in_order(done)
        if self._fragment is not None and quiet(self._fragment[0]):
            self._release_fragment()

    def _next_poll_s(self, lazy: bool = False) -> float:
        """Until the first open record goes quiet, at most ``idle_s`` (a record opened
        meanwhile is due no sooner than that): one poll per record rather than a few.
        ``lazy``: for a caller that asks again after every feed (the output thread), records
        that cannot raise anything are due after UNALARMING_WAIT_S, and there is no cap."""
        now = time.monotonic()
        with self._lock:
            recs = [r for r in (self._open, *self._rank_open.values(), *self._pending,
                                self._fragment[0] if self._fragment is not None else None) if r is not None]
            due = min((r.last_wall + (TB_WAIT_S if r.waiting else UNALARMING_WAIT_S if lazy and _unalarming(r)
                                      else self.idle_s) for r in recs), default=now)
        wait_s = max(due - now, 0.002)
        return wait_s if lazy else min(wait_s, self.idle_s)

    def quiet_in_s(self) -> float | None:
        """Seconds until ``poll`` has a record to finish; None while none is open (the
        launcher's reader thread waits this long for more output, then polls; it asks again
        after each read, so a statistics line may wait UNALARMING_WAIT_S)."""
        with self._lock:
            self._timed = True
            return self._next_poll_s(lazy=True) if self.has_open() else None

    def has_open(self) -> bool:
        return bool(self._open or self._rank_open or self._pending or self._fragment)

    async def run_poller(self) -> None:
        """Finish quiet records on time: every POLL_S while a record is open. While none is,
        it sleeps without a timer and the feed that opens one wakes it (from any thread): a
        timer every 20-50 ms kept an otherwise idle monitor waking 20-50 times a second."""
        loop = asyncio.get_running_loop()
        here = threading.get_ident()
        opened = asyncio.Event()

        def wake() -> None:
            if threading.get_ident() == here:
                opened.set()
            else:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(opened.set)

        try:
            while True:
                if self.has_open():
                    await asyncio.sleep(self._next_poll_s())
                    self.poll()
                    continue
                with self._lock:  # a feed between the check and the wait would be missed
                    if self.has_open():
                        continue
                    opened.clear()
                    self._poller_wake = wake
                await opened.wait()
        finally:
            self._poller_wake = None

    async def pump(self, reader: asyncio.StreamReader) -> None:
        """Feed from a stream until EOF, polling quiet records meanwhile."""
        ticker = asyncio.create_task(self.run_poller())
        try:
            while True:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                self.feed(chunk)
        finally:
            ticker.cancel()
            self.flush()

    # ------------------------------------------------------------ results

    def summary(self) -> dict[str, Any]:
        """What ``tuiapp logscan --json`` prints."""
        gen = self._gen_by_dp
        acc = self._accept_by_dp
        multi_dp = any(k is not None for k in gen)
        if not gen:
            last_gen = None
        elif multi_dp:  # each DP group's TP0 logs its own share
            last_gen = round(sum(gen.values()), 2)
        else:
            last_gen = gen[None]
        if not acc:
            last_acc = None
        elif len(acc) > 1:
            last_acc = round(sum(acc.values()) / len(acc), 2)
        else:
            last_acc = next(iter(acc.values()))
        return {
            "ready": self.ready,
            "decode_lines": self.decode_lines,
            "last_gen_throughput": last_gen,
            "last_accept_len": last_acc,
            "incidents": self._incident_rows(),
        }

    def _incident_rows(self) -> list[dict[str, Any]]:
        # ids in a summary count from 1 in file order; alert ids are process-wide
        incs = self._grouper.incidents
        num = {inc.alert_id: k for k, inc in enumerate(incs, 1)}
        return [
            {"id": k, "kind": i.kind, "ranks": sorted(i.ranks), "first_line": i.first_line,
             "signature_line": i.signature_line, "message": i.message,
             "caused_by": num.get(i.caused_by) if i.caused_by is not None else None,
             "count": i.count,  # appended last: readers of the keys before it are unaffected
             "joined": [[line, message] for line, message in i.joined], "repeats": list(i.repeats)}
            for k, i in enumerate(incs, 1)
        ]

    @property
    def incidents(self) -> list:
        return self._grouper.incidents

    @property
    def lines(self) -> int:
        return self._lines.line_no

    # ------------------------------------------------------------ records

    def _on_line(self, line: Line, wall: float) -> None:
        orig = line.text  # shown as printed; parsed without the collector's envelope
        text = self._env.unwrap(orig)
        if line.progress:
            self._standalone(line, orig, wall, text)
            return
        p = parse_sglang_prefix(text)
        if p is None and ("it/s]" in text or "%|" in text or "s/it]" in text) and (g := _GLUED_RE.search(text)):
            p = parse_sglang_prefix(text[g.start():])
            if p is not None:
                text = text[g.start():]
        if p is not None:
            msg = text[p.end:]
            if p.dated and p.log_t_s is not None and int(p.log_t_s // 86400) != self._day:
                self._day = int(p.log_t_s // 86400)
                self._year, self._month = _year_month(p.log_t_s)
            self._close_main()
            rec = Record(line.line_no, [orig], [msg], p.tp, p.dp, p.ep, p.log_t_s, wall)
            rec.track(msg)
            self._open = rec
            self._on_head(rec, msg)
            return
        if (lp := parse_logger_prefix(text)) is not None:
            self._on_logger_line(line, orig, text, *lp, wall)
            return
        if text.startswith("[rank"):
            m = TORCH_RANK_RE.match(text)
            if m:
                self._on_rank_line(int(m.group(1)), line, orig, text[m.end():], wall)
                return
        if text[:1] == "[" and (d := _DMESG_RE.match(text)):
            # the kernel's clock (seconds since boot) is the record's: a ring timeout and a queue failure
            # eight minutes later are two incidents, however few lines apart dmesg printed them
            self._standalone(line, orig, wall, text, log_t=float(d.group(1)))
            return
        if _STANDALONE_RE.match(text) or ("NVRM: " in text and _NVRM_RE.match(text)):
            self._standalone(line, orig, wall, text)
            return
        if text[:1] == " " and "+ Exception Group Traceback" in text[:60]:
            text = text.lstrip()[2:]  # an exception group's head opens a traceback as "Traceback" does
        raw = bool(_RAW_START_RE.match(text)) or ("nvshmem" in text and bool(_NVSHMEM_RE.match(text)))
        if not raw and text[:1] not in _NOT_A_START and RECORD_START_RE.match(text):
            raw = True  # a line another process printed in its own format (a router, a runtime)
        if not raw and "error: " in text and _ARGPARSE_RE.match(text):
            # argparse's error line starts a record, unless it closes its usage text
            raw = self._open is None or not self._open.body[0].startswith("usage: ")
        target = None if raw else self._continuation_target(text)
        if (target is not None and target is self._open and not target.has_tb and not target.waiting
                and not target.last_nonblank[:1].isspace() and _BARE_EXC_RE.match(text)):
            target = None  # an exception printed on its own after an ordinary record starts one
        if target is not None:
            self._extend(target, orig, text, wall, line.line_no)
            return
        if not text.strip():
            return
        self._close_main()
        inherit = self._last_closed
        tp = dp = ep = None
        late = inherit is not None and wall - inherit.last_wall < TB_WAIT_S and (
            text[0].isspace() or EXC_RE.match(text) is not None
            or (inherit.has_tb and text.startswith(_CHAIN_MARKERS))
            or (text.startswith(_TB_HEAD) and inherit.expects_traceback()))
        if inherit is not None and (inherit.extra.get("cut") or late):
            tp, dp, ep = inherit.tp, inherit.dp, inherit.ep  # a late or cut-off continuation
        rec = Record(line.line_no, [orig], [text], tp, dp, ep, None, wall)
        if late:
            rec.extra["cont_of"] = inherit  # a failure in it belongs to that record's incident
        rec.track(text)
        self._open = rec

    def _on_logger_line(self, line: Line, orig: str, text: str, prefix: str, log_t: float, wall: float) -> None:
        """A line behind a per-line logger prefix: the rest of the open record when that record began
        with the very same prefix (one call's message: its traceback's frames, its exception line), else
        a record of its own, kept whole (its level is what the generic layer reads)."""
        cur = self._open
        if cur is not None and cur.extra.get("logger") == prefix:
            self._extend(cur, orig, text[len(prefix):], wall, line.line_no)
            return
        self._close_main()
        rec = Record(line.line_no, [orig], [text], None, None, None, log_t, wall)
        rec.extra["logger"] = prefix
        rec.track(text[len(prefix):])
        self._open = rec

    def _continuation_target(self, text: str) -> Record | None:
        cur = self._open
        if text.startswith(_TB_HEADS):
            if cur is not None and cur.expects_traceback():
                return cur
            for rec in reversed(self._pending):
                if rec.expects_traceback():
                    return rec
            return None
        if self._pending and (cur is None or not cur.waiting):
            tb_ish = text[:1].isspace() or EXC_RE.match(text) is not None
            for rec in reversed(self._pending):
                if (tb_ish and rec.in_tb) or (cur is None and rec.waiting):
                    return rec
        return cur

    def _on_rank_line(self, rank: int, line: Line, text: str, content: str, wall: float) -> None:
        cur = self._rank_open.get(rank)
        new = True
        if cur is not None and not CPP_LOG_RE.match(content):
            if content.startswith(_TB_HEAD):
                new = not cur.expects_traceback()
            elif not content.strip() or content[0].isspace() or cur.waiting:
                new = False
            elif cur.has_tb and content.startswith(_CHAIN_MARKERS):
                new = False  # a chained exception follows
        if not new:
            assert cur is not None
            self._extend(cur, text, content, wall, line.line_no)
            return
        if cur is not None:
            del self._rank_open[rank]
        self._settle(main=False, also=cur)
        rec = Record(line.line_no, [text], [content], rank, None, None, None, wall)
        rec.log_t = self._c10_time(content)
        rec.track(content)
        self._rank_open[rank] = rec

    def _c10_time(self, content: str) -> float | None:
        """A c10 line's time (``[E321 02:07:08.408 ...]``: 21 March), in the year of the last
        dated SGLang line (c10 prints none), so two failures hours apart stay two incidents.
        None before any dated line: then closeness is judged on arrival, as for any line
        without a time."""
        if self._year is None or not content.startswith("["):
            return None
        c = parse_c10_prefix(content)
        if c is None or not 1 <= c.month <= 12:
            return None
        year = self._year + 1 if c.month < self._month - 6 else self._year  # past New Year
        h, _, rest = c.time.partition(":")
        mi, _, sec = rest.partition(":")
        whole, _, frac = sec.partition(".")
        try:
            return epoch_s(str(year), str(c.month), str(c.day), h, mi, whole, frac[:6] or None)
        except ValueError:
            return None

    def _close_main(self) -> None:
        self._settle(main=True)

    def _settle(self, main: bool, also: Record | None = None) -> None:
        """A new record starts: finish the open ones before it, in line order, so LogLines
        come out in order and a sigquit line is seen after the traceback that caused it.
        A traceback still missing its exception line is left to collect its frames."""
        done: list[Record] = [also] if also is not None else []
        if self._rank_open:
            for rank, rec in list(self._rank_open.items()):
                if not rec.waiting:
                    del self._rank_open[rank]
                    done.append(rec)
        cur = self._open
        if cur is not None:
            if not cur.waiting:
                self._open = None
                done.append(cur)
            elif main:  # a prefixed line cut it: frames may still follow, unprefixed
                self._open = None
                self._pending.append(cur)
        if done:
            self._finish_in_order(done)

    def _extend(self, rec: Record, text: str, body_line: str, wall: float, line_no: int) -> None:
        rec.add(text, body_line, wall, line_no)
        if len(rec.texts) >= MAX_RECORD_LINES:
            self._cut_record(rec)

    def _cut_record(self, rec: Record) -> None:
        """Bound one record (hours of unprefixed output would otherwise join one record)."""
        if self._open is rec:
            self._open = None
        elif rec in self._pending:
            self._pending.remove(rec)
        else:
            for rank, other in list(self._rank_open.items()):
                if other is rec:
                    del self._rank_open[rank]
        rec.extra["cut"] = True
        self._finish(rec)

    def _finish_in_order(self, records: list[Record]) -> None:
        # tracebacks cut short go last: they join what the complete ones show
        for rec in sorted(records, key=lambda r: (r.in_tb, r.line_no)):
            self._finish(rec)

    def _standalone(self, line: Line, text: str, wall: float, body: str | None = None,
                    log_t: float | None = None) -> None:
        self._settle(main=False)
        rec = Record(line.line_no, [text], [text if body is None else body], None, None, None, log_t, wall)
        rec.extra["progress"] = line.progress
        self._finish(rec, keep_last=False)

    def _on_head(self, rec: Record, msg: str) -> None:
        if msg.startswith(("Decode batch", "Prefill batch")):
            parsed = parse_batch_line(msg)
            if parsed is None:
                return
            source, fields = parsed
            rec.extra["stats"] = True  # a statistics line is never a failure: not classified
            if source == "log_decode":
                self.decode_lines += 1
                if "gen_throughput_tok_s" in fields:
                    self._gen_by_dp[rec.dp] = fields["gen_throughput_tok_s"]
                if "accept_length" in fields:
                    self._accept_by_dp[rec.dp] = fields["accept_length"]
            # Validated, not model_construct: pydantic's construct is pure Python, ~5x slower
            # than its compiled validator on this hot path (~23 us against ~5 us an event).
            self._publish(ServerStats(t_s=time.time(), source=source, dp_rank=rec.dp, **fields))
        elif msg.startswith(_REQUEST_ECHOES):
            rec.extra["stats"] = True  # a request the server logged (--log-requests) is the client's text: not classified
        elif msg.startswith(READY_TEXT):
            self.ready = True
            if self._ready_events:
                self._publish(ServerState(state="ready", message=msg.strip()))

    def _finish(self, rec: Record, keep_last: bool = True) -> None:
        texts = rec.texts
        while len(texts) > 1 and not texts[-1].strip():
            texts.pop()
            rec.body.pop()
            if rec.nums:
                rec.nums.pop()
        finding: Finding | None = None
        if not rec.extra.get("progress") and not (len(texts) == 1 and (
                rec.extra.get("stats") or _quiet_access_log(rec.body[0]))):
            finding = classify(rec.body)
        text = "\n".join(texts) if (self._log_lines or finding is not None) else ""
        if self._log_lines:
            if finding is not None:
                level = "error" if finding.severity == "error" else "warning"
            elif rec.has_tb:
                level = "error"
            else:
                level = _level(rec.body[0])
            self._publish(LogLine(
                t_s=time.time(), kind="log", line_no=rec.line_no, text=text,
                tp_rank=rec.tp, dp_rank=rec.dp, ep_rank=rec.ep, level=level,
            ))
        if keep_last:
            self._last_closed = rec
        cont_of = rec.extra.pop("cont_of", None)
        into = cont_of.extra.get("incident") if cont_of is not None else None
        if (self._fragment is not None and finding is not None and finding.fragment and into is None
                and finding.kind == self._fragment[1].kind):
            return  # the next rank's dump of the same kind (SGLang's watchdog dumps every scheduler): one waits
        if self._fragment is not None and (finding is None or finding.fragment):
            self._release_fragment()  # no failure follows the headless backtrace: it stands alone
        self._fragment = None  # (or one does: the backtrace was an earlier print of its dump)
        if finding is not None and finding.fragment and into is None:
            rec.held = True  # (waits as a traceback missing its exception line does)
            self._fragment = (rec, finding, text)
            rec.extra["incident"] = None
            return
        if finding is not None and finding.apart and into is None:
            into = self._add_apart(rec, finding, text)
        elif finding is not None:
            into = self._add_finding(rec, finding, text, into)
        elif _SHUTDOWN_RE.match(rec.body[0]):
            self._grouper.note_shutdown(rec.log_t, rec.last_wall)
        rec.extra["incident"] = into  # a piece that continues this one joins the same incident

    def _add_finding(self, rec: Record, finding: Finding, text: str, into: Any = None,
                     at: int | None = None) -> Any:
        """``at``: the line the incident starts at, when not the record's first (a failure of its own
        inside a record, last_resort.separate_marks)."""
        # the record's own prefix says whose it is; ranks in the text (a peer named in
        # an NCCL message) count only for records without one
        ranks = [rec.tp] if rec.tp is not None else finding.ranks
        first_line, sig_line = (rec.line_no, rec.line_of(finding.line_index)) if at is None else (at, at)
        into = self._grouper.add(finding, ranks, first_line, text, rec.log_t, rec.last_wall, into=into,
                                 sig_line=sig_line)
        if finding.death is not None:
            self._grouper.add(finding.death, ranks, rec.line_no, text, rec.log_t, rec.last_wall,
                              sig_line=rec.line_of(finding.death.line_index))
        return into

    def _add_apart(self, rec: Record, finding: Finding, text: str) -> Any:
        """A record that holds several failures of its own (last_resort.separate_marks): each is an
        incident that starts at its own line, as if it had been a record of its own."""
        first = self._add_finding(rec, finding, text, at=rec.line_of(finding.line_index))
        for j in finding.apart:
            other = classify([rec.body[j]])
            if other is None:
                continue
            # (not a follow-up of the failure beside it, nor of a death before it: its own)
            other.generic, other.knock_on = False, ""
            self._add_finding(rec, other, rec.texts[j] if j < len(rec.texts) else text, at=rec.line_of(j))
        return first

    def _release_fragment(self) -> None:
        held, self._fragment = self._fragment, None
        if held is not None:
            held[0].extra["incident"] = self._add_finding(*held)


def _year_month(t: float) -> tuple[int, int]:
    tm = time.gmtime(t)
    return tm.tm_year, tm.tm_mon


def _unalarming(rec: Record) -> bool:
    """Finishing it can raise nothing (see _finish): a progress bar, or one line that is a
    statistics line or a request's access-log line."""
    return not rec.waiting and (bool(rec.extra.get("progress")) or (
        len(rec.texts) == 1 and (bool(rec.extra.get("stats")) or _quiet_access_log(rec.body[0]))))


def _quiet_access_log(head: str) -> bool:
    return head.startswith(_ACCESS_LOG) and _HTTP_500 not in head


def _level(head: str) -> str:
    if head.startswith("["):
        m = CPP_LOG_RE.match(head)
        if m:
            return {"E": "error", "F": "error", "W": "warning"}.get(m.group(1), "info")
    if head.startswith("ERROR"):
        return "error"
    if _WARN_RE.match(head) or _DEPRECATED in head or head.startswith(_DEPRECATED[1:]):
        return "warning"
    return "info"
