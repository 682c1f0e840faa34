"""SGLang's log format on stderr, uvicorn's access lines on stdout.

``[YYYY-mm-dd HH:MM:SS{ DPd}{ TPt}{ EPe}] message`` (``.mmm`` after the seconds with env
``SGLANG_LOG_MS=1``); a multi-line message is one record whose continuation lines carry
no prefix, exactly like Python logging with an embedded traceback.
"""

from __future__ import annotations

import sys
import time


class RankTag:
    """The prefix tags of one scheduler process (TP rank within its DP group)."""

    __slots__ = ("tp", "dp", "ep", "tag")

    def __init__(self, tp: int, dp: int | None, ep: int | None, tp_size: int):
        self.tp, self.dp, self.ep = tp, dp, ep
        parts = []
        if dp is not None:
            parts.append(f"DP{dp}")
        if tp_size > 1:
            parts.append(f"TP{tp}")
        if ep is not None:
            parts.append(f"EP{ep}")
        self.tag = "".join(" " + p for p in parts)


def rank_tags(tp_size: int, dp_size: int, ep_size: int, attn_dp: bool) -> list[RankTag]:
    """One tag per scheduler process, in launch order (scheduler_0, scheduler_1, ...)."""
    tags = []
    if attn_dp:  # DP groups inside the TP ranks: TP0..TPn-1 with DP = tp_rank // (tp/dp)
        per = max(tp_size // max(dp_size, 1), 1)
        for t in range(tp_size):
            tags.append(RankTag(t, t // per, t if ep_size > 1 else None, tp_size))
        return tags
    for d in range(dp_size):
        for t in range(tp_size):
            dp = d if dp_size > 1 else None
            ep = t if ep_size > 1 else None
            tags.append(RankTag(t, dp, ep, tp_size))
    return tags


def node_ranks(tags: list[RankTag], nnodes: int, node_rank: int) -> list[RankTag]:
    """The ranks node ``node_rank`` of ``nnodes`` holds: an equal consecutive share, as SGLang
    places TP ranks (TP0-7 on node 0, TP8-15 on node 1 at --tp 16 --nnodes 2)."""
    if nnodes <= 1:
        return tags
    per = max(len(tags) // nnodes, 1)
    return tags[node_rank * per:(node_rank + 1) * per] or tags[-1:]


class SimLog:
    def __init__(self, err=None, out=None, with_ms: bool = False):
        self.err = err or sys.stderr
        self.out = out or sys.stdout
        self.with_ms = with_ms

    def stamp(self) -> str:
        now = time.time()
        s = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if self.with_ms:
            s += f".{int(now * 1000) % 1000:03d}"
        return s

    def emit(self, msg: str, rank: RankTag | None = None) -> None:
        tag = rank.tag if rank is not None else ""
        self.err.write(f"[{self.stamp()}{tag}] {msg}\n")
        self.err.flush()

    def raw(self, text: str) -> None:
        """Unprefixed output (tqdm bars with \\r, NCCL, PyTorch C++ lines)."""
        self.err.write(text)
        self.err.flush()

    def access(self, client: str, method: str, path: str, status: int, phrase: str) -> None:
        self.out.write(f'[{self.stamp()}] INFO:     {client} - "{method} {path} HTTP/1.1" {status} {phrase}\n')
        self.out.flush()

    def uvicorn(self, msg: str, level: str = "INFO") -> None:
        self.err.write(f"[{self.stamp()}] {level + ':':<9} {msg}\n")
        self.err.flush()


def tqdm_line(desc: str, n: int, total: int, elapsed_s: float, style: str) -> str:
    """One tqdm refresh; style 'shards' is SGLang's weight-loading bar_format."""
    pct = 100.0 * n / total if total else 100.0
    rate = n / elapsed_s if elapsed_s > 0 else 0.0
    remaining = (total - n) / rate if rate > 0 else 0.0

    def mmss(s: float) -> str:
        s = int(s)
        return f"{s // 60:02d}:{s % 60:02d}"

    rate_s = f"{rate:5.2f}it/s" if rate > 0 else "?it/s"
    if style == "shards":
        return f"{desc}: {pct:3.0f}% Completed | {n}/{total} [{mmss(elapsed_s)}<{mmss(remaining)}, {rate_s}]"
    filled = int(10 * n / total) if total else 10
    bar = "\u2588" * filled + " " * (10 - filled)
    return f"{desc}: {pct:3.0f}%|{bar}| {n}/{total} [{mmss(elapsed_s)}<{mmss(remaining)}, {rate_s}]"
