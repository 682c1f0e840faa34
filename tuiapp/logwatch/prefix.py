"""Line prefixes: SGLang's ``[ts DPn TPn EPn]``, an optional Ray actor tag before it, and
PyTorch's per-line ``[rankN]:``.

Format (sglang/srt/utils/common.py configure_logger, scheduler.py prefix order):
``[%Y-%m-%d %H:%M:%S[.mmm][ DPn][ PPn][ ATTN_CPn][ MOE_DPn][ TPn][ EPn]] message``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

SGLANG_PREFIX_RE = re.compile(
    r"(?:\([^()]*pid=\d+[^()]*\) )?"
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?"
    r"((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)
_TAG_RE = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)")
TORCH_RANK_RE = re.compile(r"\[rank(\d+)\]: ?")
# c10 logging inside a [rankN]: line: "[E1129 10:00:00.123456789 ProcessGroupNCCL.cpp:632] "
CPP_LOG_RE = re.compile(r"\[([IWEF])\d{4} [\d:.]+ (?:\d+ )?[\w./-]+:\d+\] ?")


@dataclass(slots=True)
class Prefix:
    end: int  # where the message starts
    log_t_s: float
    tp: int | None = None
    dp: int | None = None
    ep: int | None = None


_epoch_cache: dict[tuple[str, ...], float] = {}


def _epoch(groups: tuple[str, ...]) -> float:
    # Log timestamps are local time without a zone; they are only compared with each
    # other (grouping windows), so reading them as UTC is harmless.
    key = groups[:6]
    t = _epoch_cache.get(key)
    if t is None:
        if len(_epoch_cache) > 64:  # log lines come in time order: recent seconds suffice
            _epoch_cache.clear()
        y, mo, d, h, mi, s = (int(g) for g in key)
        # timegm rejects only a year or month out of range (a garbled line): clamp, never raise
        t = float(calendar.timegm((max(y, 1), min(max(mo, 1), 12), d, h, mi, s, 0, 0, 0)))
        _epoch_cache[key] = t
    frac = groups[6]
    return t + (int(frac) / 10 ** len(frac) if frac else 0.0)


def parse_sglang_prefix(text: str) -> Prefix | None:
    if not text or text[0] not in "[(":
        return None
    m = SGLANG_PREFIX_RE.match(text)
    if m is None:
        return None
    groups = m.groups()
    p = Prefix(end=m.end(), log_t_s=_epoch(groups[:7]))
    tags = groups[7]
    if tags:
        for name, num in _TAG_RE.findall(tags):
            if name == "TP":
                p.tp = int(num)
            elif name == "DP":
                p.dp = int(num)
            elif name == "EP":
                p.ep = int(num)
    return p
