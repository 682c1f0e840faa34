"""Line prefixes: SGLang's ``[ts DPn TPn EPn]``, an optional Ray actor tag before it, and
PyTorch's per-line ``[rankN]:`` with its c10 ``[E210 02:06:33.347 file.cpp:N]``.

SGLang's format (sglang/srt/utils/common.py configure_logger, scheduler.py prefix order) is
``[%Y-%m-%d %H:%M:%S[.mmm][ DPn][ PPn][ ATTN_CPn][ MOE_DPn][ TPn][ EPn]] message``; across
versions and forks it has also been ``[%H:%M:%S TPn]`` (0.2/0.3), ``[%m-%d %H:%M:%S]`` (the
diffusion runtime), ``[TPn]`` without a time, and no tag at all on one GPU. A paste that lost
the first character still starts ``2026-05-24 03:51:44 TP0] ``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

_TAGS = r"((?: (?:[A-Z]+_)*[A-Z]{2,}\d+)*)"
SGLANG_PREFIX_RE = re.compile(
    r"(?:\([^()]*pid=\d+[^()]*\) )?"
    r"(?:\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?" + _TAGS + r"\] ?"
    r"|(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?" + _TAGS + r"\] "  # lost "["
    r"|\[(?:(\d\d)-(\d\d) )?(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?" + _TAGS + r"\] ?"  # [12-16 14:27:08] [04:40:55 TP0]
    r"|\[((?:[A-Z]+_)*[A-Z]{2,}\d+(?: (?:[A-Z]+_)*[A-Z]{2,}\d+)*)\] )"  # [TP0] without a time
)
_TAG_RE = re.compile(r"((?:[A-Z]+_)*[A-Z]{2,})(\d+)")
TORCH_RANK_RE = re.compile(r"\[rank(\d+)\]: ?")
# c10 logging: "[E1129 10:00:00.123456789 ProcessGroupNCCL.cpp:632] ". glog writes the month
# without a leading zero, so February 10 is "E210" and November 29 is "E1129".
# what may stand before a kernel line's "NVRM: " or "Xid": dmesg's stamp or a journal's bracketed field,
# a paste's bare time ("19:14:43  NVRM: Xid ..."), the journal's "kernel: "
KERNEL_LINE_PREFIX = r"(?:> )?(?:\[[^\]]{1,40}\] |\d\d:\d\d:\d\d(?:\.\d+)? +)?(?:kernel: )?"
CPP_LOG_RE = re.compile(r"\[([IWEF])(\d{3,4}) ([\d:.]+) (?:\d+ )?[\w./-]+:\d+\] ?")


@dataclass(slots=True)
class Prefix:
    end: int  # where the message starts
    log_t_s: float | None
    tp: int | None = None
    dp: int | None = None
    ep: int | None = None
    dated: bool = False  # the prefix names the year (not time only or month-day)


_epoch_cache: dict[tuple[str, ...], float] = {}


def epoch_s(y: str, mo: str, d: str, h: str, mi: str, s: str, frac: str | None) -> float:
    # Log timestamps are local time without a zone; they are only compared with each
    # other (grouping windows), so reading them as UTC is harmless.
    key = (y, mo, d, h, mi, s)
    t = _epoch_cache.get(key)
    if t is None:
        if len(_epoch_cache) > 64:  # log lines come in time order: recent seconds suffice
            _epoch_cache.clear()
        yi, moi, di, hi, mii, si = (int(g) for g in key)
        # timegm rejects only a year or month out of range (a garbled line): clamp, never raise
        t = float(calendar.timegm((max(yi, 1), min(max(moi, 1), 12), di, hi, mii, si, 0, 0, 0)))
        _epoch_cache[key] = t
    return t + (int(frac) / 10 ** len(frac) if frac else 0.0)


def parse_sglang_prefix(text: str) -> Prefix | None:
    if not text or text[0] not in "[(2":
        return None
    m = SGLANG_PREFIX_RE.match(text)
    if m is None:
        return None
    g = m.groups()
    if g[0] is not None:
        log_t: float | None = epoch_s(*g[0:7])
        tags = g[7]
    elif g[8] is not None:
        log_t = epoch_s(*g[8:15])
        tags = g[15]
    elif g[18] is not None:
        # no year (month-day) or no date at all (time only): a fixed year keeps the
        # times comparable with each other, which is all grouping needs
        log_t = epoch_s("2000", g[16] or "01", g[17] or "01", g[18], g[19], g[20], g[21])
        tags = g[22]
    else:
        log_t = None
        tags = g[23]
    p = Prefix(end=m.end(), log_t_s=log_t, dated=g[0] is not None or g[8] is not None)
    if tags:
        for name, num in _TAG_RE.findall(tags):
            if name == "TP":
                p.tp = int(num)
            elif name == "DP":
                p.dp = int(num)
            elif name == "EP":
                p.ep = int(num)
    return p


# vLLM's logger (and its workers', behind a process tag) puts its prefix before every line of one call's
# message: a traceback that logger.exception wrote arrives as lines that all begin with the same prefix,
# "ERROR 03-30 02:15:01 [engine.py:160] " (or "... engine.py:400] " before 0.8)
LOGGER_PREFIX_RE = re.compile(r"(?:\([^()]*\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"
                              r"(?:\.(\d+))? \[?[\w./-]+:\d+\] ")


def parse_logger_prefix(text: str) -> tuple[str, float] | None:
    """(the prefix, its time) of a line behind a per-line logger prefix; its time has no year, so a
    fixed one keeps times comparable with each other, as for SGLang's ``[mm-dd ...]``."""
    if text[:1] not in "DIWEC(":
        return None
    m = LOGGER_PREFIX_RE.match(text)
    return None if m is None else (m.group(0), epoch_s("2000", *m.groups()))


@dataclass(slots=True)
class CppLog:
    level: str  # I W E F
    month: int
    day: int
    time: str
    end: int


def parse_c10_prefix(text: str) -> CppLog | None:
    """``[E210 02:06:33.347 file.cpp:1595] ...`` -> level E, 10 February."""
    m = CPP_LOG_RE.match(text)
    if m is None:
        return None
    md = m.group(2)
    return CppLog(m.group(1), int(md[:-2]), int(md[-2:]), m.group(3), m.end())
