"""Deterministic toy tokenizer and text generator (no model files, no randomness by time).

Tokenizer: a prompt is split by the regex ``\\w{1,4}|[^\\w\\s]`` (words in pieces of up to
four characters, each punctuation mark alone; whitespace is dropped), so "Hello, world!"
is 6 tokens (Hell, o, ",", worl, d, "!"); a token's id is crc32 of its text modulo the vocabulary size.
Generation: every output token is one word with a leading space, picked from a fixed list
by a walk seeded from the prompt (and from a per-request salt when temperature > 0).
"""

from __future__ import annotations

import re
import zlib

from tuiapp.sim.model import EOS_TOKEN_ID, VOCAB_SIZE

_TOKEN_RE = re.compile(r"\w{1,4}|[^\w\s]")

WORDS = (
    "the model streams tokens across eight ranks while the scheduler batches requests "
    "and every decode step waits for an allreduce over the PCIe switch so speculative "
    "drafts must be accepted often enough to pay for the verify pass kernels graphs "
    "memory cache prefill latency throughput tensor expert parallel quantised weights "
    "attention layer hidden state sampling temperature benchmark trial baseline knob"
).split()
_PIECES = tuple(" " + w for w in WORDS)
_IDS = tuple(zlib.crc32(w.encode()) % VOCAB_SIZE for w in WORDS)
_STRIDE = 7  # coprime with len(WORDS), so the walk visits every word


def token_ids(text: str) -> list[int]:
    return [zlib.crc32(t.encode()) % VOCAB_SIZE for t in _TOKEN_RE.findall(text)]


def start_state(prompt_ids: list[int], salt: int = 0) -> int:
    h = zlib.crc32(repr(prompt_ids[:64]).encode()) ^ (salt * 0x9E3779B1)
    return h % len(WORDS)


def word(state: int, i: int) -> tuple[str, int]:
    """The i-th generated piece and its id for a request whose walk starts at ``state``."""
    k = (state + i * _STRIDE) % len(WORDS)
    return _PIECES[k], _IDS[k]


def eos_after(prompt_ids: list[int], salt: int = 0) -> int:
    """How many tokens the toy model writes before its EOS when ignore_eos is false."""
    return 64 + (zlib.crc32(repr(prompt_ids).encode()) + salt) % 449


EOS_ID = EOS_TOKEN_ID
